import { expect } from 'chai';
import { planRestore } from './restore-plan.js';

const OWNERS = {
  platform: new Set(['postgres', 'pg_database_owner']),
  customer: new Set(['db_a_owner', 'db_a_admin', 'cred_aaaaaaaaaaaaaaaaaaaa']),
};

describe('planRestore', function () {
  it('gives the platform its entries in order, the customer theirs, and event triggers last', function () {
    const list = [
      ';',
      '; Archive created at 2026-11-26 00:59:01 UTC',
      '3415; 1262 16384 DATABASE - db_a postgres',
      '3419; 0 0 ACL - SCHEMA public pg_database_owner',
      '232; 1255 16552 FUNCTION public chk(integer) db_a_owner',
      '223; 1259 16394 TABLE public tenants postgres',
      '230; 1259 16553 TABLE public trap cred_aaaaaaaaaaaaaaaaaaaa',
      '3408; 0 16553 TABLE DATA public trap cred_aaaaaaaaaaaaaaaaaaaa',
      '3401; 0 16394 TABLE DATA public tenants postgres',
      '3398; 3256 16568 POLICY public orders tenant_isolation db_a_owner',
      '3190; 3466 16521 EVENT TRIGGER - deny_tenant_isolation_bypass postgres',
      '3191; 0 0 COMMENT - EVENT TRIGGER deny_tenant_isolation_bypass postgres',
      '',
    ].join('\n');
    expect(planRestore(list, OWNERS)).to.deep.equal({
      platform: [
        '3415; 1262 16384 DATABASE - db_a postgres',
        '3419; 0 0 ACL - SCHEMA public pg_database_owner',
        '223; 1259 16394 TABLE public tenants postgres',
        '3401; 0 16394 TABLE DATA public tenants postgres',
      ],
      customer: [
        '232; 1255 16552 FUNCTION public chk(integer) db_a_owner',
        '230; 1259 16553 TABLE public trap cred_aaaaaaaaaaaaaaaaaaaa',
        '3408; 0 16553 TABLE DATA public trap cred_aaaaaaaaaaaaaaaaaaaa',
        '3398; 3256 16568 POLICY public orders tenant_isolation db_a_owner',
      ],
      customerRuns: [
        {
          asOwner: false,
          lines: [
            '232; 1255 16552 FUNCTION public chk(integer) db_a_owner',
            '230; 1259 16553 TABLE public trap cred_aaaaaaaaaaaaaaaaaaaa',
            '3408; 0 16553 TABLE DATA public trap cred_aaaaaaaaaaaaaaaaaaaa',
            '3398; 3256 16568 POLICY public orders tenant_isolation db_a_owner',
          ],
        },
      ],
      last: ['3190; 3466 16521 EVENT TRIGGER - deny_tenant_isolation_bypass postgres', '3191; 0 0 COMMENT - EVENT TRIGGER deny_tenant_isolation_bypass postgres'],
      customerOwners: ['cred_aaaaaaaaaaaaaaaaaaaa', 'db_a_owner'],
    });
  });

  it('judges an entry by its owner, whatever its name says', function () {
    // A customer's table named like the superuser, with spaces, is still the customer's.
    const plan = planRestore('230; 1259 16553 TABLE public my table postgres db_a_owner\n231; 1259 16554 TABLE public EVENT TRIGGER x db_a_owner\n', OWNERS);
    expect(plan.customer).to.have.length(2);
    expect(plan.platform).to.deep.equal([]);
    expect(plan.last).to.deep.equal([]);
  });

  it('keeps extensions (which a dump gives no owner) among the customer’s entries, in runs of their own', function () {
    const list = [
      '4; 2615 21190 SCHEMA - app db_a_owner',
      '3; 3079 21192 EXTENSION - citext ',
      '3580; 0 0 COMMENT - EXTENSION citext ',
      '2; 3079 21110 EXTENSION - pg_trgm ',
      '3581; 0 0 COMMENT - EXTENSION pg_trgm ',
      '230; 1259 16553 TABLE app t db_a_owner',
      '5; 3079 21111 EXTENSION - "uuid-ossp" ',
      '',
    ].join('\n');
    const plan = planRestore(list, OWNERS);
    expect(plan.customer).to.deep.equal(list.split('\n').filter(Boolean));
    expect(plan.customerRuns).to.deep.equal([
      { asOwner: false, lines: ['4; 2615 21190 SCHEMA - app db_a_owner'] },
      {
        asOwner: true,
        lines: [
          '3; 3079 21192 EXTENSION - citext ',
          '3580; 0 0 COMMENT - EXTENSION citext ',
          '2; 3079 21110 EXTENSION - pg_trgm ',
          '3581; 0 0 COMMENT - EXTENSION pg_trgm ',
        ],
      },
      { asOwner: false, lines: ['230; 1259 16553 TABLE app t db_a_owner'] },
      { asOwner: true, lines: ['5; 3079 21111 EXTENSION - "uuid-ossp" '] },
    ]);
    expect(plan.customerOwners).to.deep.equal(['db_a_owner']);
    // Only extensions go without an owner.
    expect(() => planRestore('6; 0 0 COMMENT - SCHEMA app \n', OWNERS)).to.throw("owned by ''");
  });

  it('refuses an entry owned by a role that is neither side’s, or by nobody', function () {
    expect(() => planRestore('230; 1259 16553 TABLE public trap db_a_service\n', OWNERS)).to.throw("owned by 'db_a_service'");
    expect(() => planRestore('230; 1259 16553 TABLE public trap \n', OWNERS)).to.throw("owned by ''");
    expect(() => planRestore('not an entry\n', OWNERS)).to.throw('unexpected line');
  });
});
