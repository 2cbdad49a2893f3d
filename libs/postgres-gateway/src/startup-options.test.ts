import { expect } from 'chai';
import { joinOptions, splitOptions, takeTenant, takeTenantOption } from './startup-options.js';

const TENANT = '0190f3c4-5b6a-7c8d-9e0f-112233445566';

describe('startup options', () => {
  it('splits on whitespace with backslash escapes, as PostgreSQL does, and joins back', () => {
    expect(splitOptions('  -c a=1   -c\tb=x\\ y  --c=\\\\z ')).to.deep.equal(['-c', 'a=1', '-c', 'b=x y', '--c=\\z']);
    const words = ['-c', 'application_name=a b', '--search_path=x\\y'];
    expect(splitOptions(joinOptions(words))).to.deep.equal(words);
  });

  it('takes the tenant from -c, -cname and --name forms, and the nile.tenant_id alias', () => {
    for (const options of [`-c platform.tenant_id=${TENANT}`, `-cplatform.tenant_id=${TENANT}`, `--platform.tenant_id=${TENANT}`]) {
      expect(takeTenantOption(options), options).to.deep.equal({ tenantId: TENANT, setting: 'platform.tenant_id', rest: [] });
    }
    // Under the name it was given, which the gateway passes on.
    for (const options of [`-c nile.tenant_id=${TENANT}`, `-c NILE.TENANT_ID=${TENANT.toUpperCase()}`]) {
      expect(takeTenantOption(options), options).to.deep.equal({ tenantId: TENANT, setting: 'nile.tenant_id', rest: [] });
    }
  });

  it('keeps every other option, in order, and lets the last tenant win', () => {
    const other = '0190f3c4-5b6a-7c8d-9e0f-000000000000';
    expect(takeTenantOption(`-c statement_timeout=5s -c platform.tenant_id=${other} --work_mem=4MB -c nile.tenant_id=${TENANT}`)).to.deep.equal({
      tenantId: TENANT,
      setting: 'nile.tenant_id',
      rest: ['-c', 'statement_timeout=5s', '--work_mem=4MB'],
    });
  });

  it('reads an empty value as no tenant, and no options as none', () => {
    expect(takeTenantOption('-c platform.tenant_id=')).to.deep.equal({ tenantId: null, rest: [] });
    expect(takeTenantOption(undefined)).to.deep.equal({ tenantId: null, rest: [] });
  });

  it('reports a tenant that is not a UUID instead of passing it on', () => {
    expect(takeTenantOption("-c platform.tenant_id=x'or'1")).to.deep.equal({ invalid: { name: 'platform.tenant_id', value: "x'or'1" } });
    expect(takeTenantOption('-c nile.tenant_id=42')).to.deep.equal({ invalid: { name: 'nile.tenant_id', value: '42' } });
  });

  it('takes a tenant given as a startup parameter too, which wins over the options as in PostgreSQL', () => {
    const other = '0190f3c4-5b6a-7c8d-9e0f-000000000000';
    const packet = (entries: [string, string][]) => takeTenant(new Map(entries));
    expect(packet([['options', `-c nile.tenant_id=${other} -c work_mem=4MB`], ['NILE.tenant_id', TENANT.toUpperCase()]])).to.deep.equal({
      tenantId: TENANT,
      setting: 'nile.tenant_id',
      rest: ['-c', 'work_mem=4MB'],
    });
    expect(packet([['options', `-c platform.tenant_id=${TENANT}`], ['application_name', 'x']])).to.deep.equal({ tenantId: TENANT, setting: 'platform.tenant_id', rest: [] });
    expect(packet([['options', `-c platform.tenant_id=${other}`], ['nile.tenant_id', TENANT]])).to.deep.equal({ tenantId: TENANT, setting: 'nile.tenant_id', rest: [] });
    expect(packet([['options', `-c nile.tenant_id=${TENANT}`], ['platform.tenant_id', '']])).to.deep.equal({ tenantId: null, rest: [] });
    expect(packet([['platform.tenant_id', '']])).to.deep.equal({ tenantId: null, rest: [] });
    expect(packet([['platform.tenant_id', 'nope']])).to.deep.equal({ invalid: { name: 'platform.tenant_id', value: 'nope' } });
    expect(packet([['options', '-c platform.tenant_id=bad'], ['platform.tenant_id', TENANT]])).to.deep.equal({ invalid: { name: 'platform.tenant_id', value: 'bad' } });
  });
});
