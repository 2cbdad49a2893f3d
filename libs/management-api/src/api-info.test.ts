import { expect } from 'chai';
import { managementApiInfo } from './api-info.js';

describe('managementApiInfo', () => {
  const base = { title: 'Multi-tenant PostgreSQL platform API', description: 'Workspaces and databases. Errors are APIError {errorCode, message, statusCode}.' };

  it('lists {base_url} alone when {api_url} is the same address', () => {
    expect(managementApiInfo({ buildHash: 'abc1234', publicBaseUrl: 'http://api.test', publicApiUrl: 'http://api.test' })).to.deep.equal({
      ...base,
      version: '0.1.0-abc1234',
      servers: [{ url: 'http://api.test', description: '{base_url}' }],
    });
  });

  it('lists {api_url} as a server of its own when it differs', () => {
    expect(managementApiInfo({ buildHash: 'dev', publicBaseUrl: 'https://base.test', publicApiUrl: 'https://tenants.test' })).to.deep.equal({
      ...base,
      version: '0.1.0-dev',
      servers: [
        { url: 'https://base.test', description: '{base_url}' },
        { url: 'https://tenants.test', description: '{api_url}' },
      ],
    });
  });
});
