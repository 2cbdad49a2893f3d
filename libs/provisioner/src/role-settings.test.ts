import { expect } from 'chai';
import { parseRoleSetting } from './role-settings.js';

describe('parseRoleSetting', () => {
  it('splits a setting at its first =', () => {
    expect(parseRoleSetting('cred_a', 'statement_timeout=30s')).to.deep.equal({ name: 'statement_timeout', value: '30s' });
    expect(parseRoleSetting('cred_a', 'search_path=a=b, "x y"')).to.deep.equal({ name: 'search_path', value: 'a=b, "x y"' });
  });

  it('takes dotted custom settings, empty values and values over several lines', () => {
    expect(parseRoleSetting('cred_a', 'platform.tenant_id=')).to.deep.equal({ name: 'platform.tenant_id', value: '' });
    expect(parseRoleSetting('cred_a', 'application_name=one\ntwo')).to.deep.equal({ name: 'application_name', value: 'one\ntwo' });
  });

  it('refuses a name that would have to be quoted, naming the role', () => {
    for (const setting of ['work_mem', '=1', '1abc=1', 'work mem=1', 'x;drop role y=1', 'a"b=1']) {
      expect(() => parseRoleSetting('cred_a', setting), setting).to.throw(`unexpected setting of role cred_a: ${setting}`);
    }
  });
});
