import { expect } from 'chai';
import { errorResponse } from './protocol.js';
import { ProtocolViolation, Refusal, SqlState, refusals } from './refusals.js';

/** Every refusal of the catalogue, built with sample arguments. */
function everyRefusal(): Record<string, Refusal> {
  return {
    unsupportedProtocol: refusals.unsupportedProtocol((2 << 16) | 5),
    tooManyClients: refusals.tooManyClients(),
    tlsRequired: refusals.tlsRequired(),
    noUserName: refusals.noUserName(),
    replicationUnsupported: refusals.replicationUnsupported(),
    invalidTenantParameter: refusals.invalidTenantParameter('platform.tenant_id', 'x'),
    routedStartupTooLong: refusals.routedStartupTooLong(10_050, 10_000),
    routesUnavailable: refusals.routesUnavailable(),
    clientTooSlow: refusals.clientTooSlow(),
    loginTimedOut: refusals.loginTimedOut(),
    tooManyLoginsFromAddress: refusals.tooManyLoginsFromAddress(100),
    tooManyLoginsOfUserFromAddress: refusals.tooManyLoginsOfUserFromAddress('cred_x', 20),
    tooManyLoginsOfUser: refusals.tooManyLoginsOfUser('cred_x', 50),
    poolFull: refusals.poolFull(5000, 20),
    serverUnreachable: refusals.serverUnreachable(5000),
    serverConnectionLost: refusals.serverConnectionLost(),
    serverStateUnknown: refusals.serverStateUnknown(),
    passwordFailed: refusals.passwordFailed('cred_x'),
    authorizationIdentityUnsupported: refusals.authorizationIdentityUnsupported(),
    scramExtensionUnsupported: refusals.scramExtensionUnsupported(),
    databaseDoesNotExist: refusals.databaseDoesNotExist('shop'),
    databaseNotReady: refusals.databaseNotReady('shop', 'BUILT'),
    tenantDoesNotExist: refusals.tenantDoesNotExist('0b2f0f6e-7f1e-4d8a-9b0e-3f2c1d4e5a6b', 'shop'),
    tenantCheckFailed: refusals.tenantCheckFailed(undefined, 'boom'),
    fromCluster: refusals.fromCluster({ severity: 'FATAL', code: '53300', message: 'too many connections for role "cred_x"' }, 'cred_x'),
  };
}

describe('refusals: the catalogue of the gateway’s ErrorResponses', () => {
  it('builds every entry, each FATAL with one of the catalogue’s SQLSTATEs', () => {
    const built = everyRefusal();
    expect(Object.keys(built).sort()).to.deep.equal(Object.keys(refusals).sort());
    const known: string[] = Object.values(SqlState);
    for (const [name, refusal] of Object.entries(built)) {
      expect(refusal, name).to.be.instanceOf(Refusal);
      expect(refusal.fields.severity, name).to.equal('FATAL');
      expect(known, name).to.include(refusal.fields.code);
      expect(refusal.message, name).to.equal(refusal.fields.message);
    }
  });

  it('names each SQLSTATE once', () => {
    const codes = Object.values(SqlState);
    expect(new Set(codes).size).to.equal(codes.length);
    for (const code of codes) expect(code).to.match(/^[0-9A-Z]{5}$/);
  });

  it('words the refusals a client compares with PostgreSQL’s exactly as PostgreSQL does', () => {
    expect(refusals.passwordFailed('cred_x').fields).to.deep.equal({ severity: 'FATAL', code: '28P01', message: 'password authentication failed for user "cred_x"' });
    expect(refusals.tooManyClients().fields).to.deep.equal({ severity: 'FATAL', code: '53300', message: 'sorry, too many clients already' });
    // A full pool and a server that does not answer read apart: 53300 only for the first.
    expect(refusals.poolFull(1000, 2).fields).to.deep.equal({
      severity: 'FATAL',
      code: '53300',
      message: 'sorry, too many clients already',
      detail: 'All 2 server connections of the pool were in use by other clients for 1000 ms.',
    });
    expect(refusals.serverUnreachable(1000).fields).to.deep.equal({
      severity: 'FATAL',
      code: '57P03',
      message: 'the database server did not answer; try again shortly',
      detail: 'No server connection of the pool could be opened within 1000 ms.',
    });
    expect(refusals.databaseDoesNotExist('shop').fields).to.deep.equal({ severity: 'FATAL', code: '3D000', message: 'database "shop" does not exist' });
    expect(refusals.unsupportedProtocol((2 << 16) | 5).fields.message).to.equal('unsupported frontend protocol 2.5: server supports 3.0 to 3.2');
    expect(refusals.scramExtensionUnsupported().fields.code).to.equal('0A000');
  });

  it('passes on a cluster’s refusal in the gateway’s words: a wrong password as an unknown name’s, no server internals', () => {
    const wrongPassword = refusals.fromCluster({ severity: 'FATAL', code: '28P01', message: 'password authentication failed for user "cred_x"', detail: 'x' }, 'cred_x');
    expect(wrongPassword.fields).to.deep.equal(refusals.passwordFailed('cred_x').fields);
    const other = refusals.fromCluster({ severity: 'ERROR', code: '42501', message: 'denied', hint: 'ask', file: 'auth.c', line: '1' } as never, 'cred_x');
    expect(other.fields).to.deep.equal({ severity: 'ERROR', code: '42501', message: 'denied', hint: 'ask' });
    expect(refusals.fromCluster({ message: 'gone' }, 'cred_x').fields.code).to.equal(SqlState.connectionFailure);
  });

  it('makes a protocol violation an 08P01 refusal, with its detail only when it has one', () => {
    expect(new ProtocolViolation('invalid message length').fields).to.deep.equal({ severity: 'FATAL', code: '08P01', message: 'invalid message length' });
    expect(new ProtocolViolation('malformed SCRAM message', 'Nonce does not match.').fields.detail).to.equal('Nonce does not match.');
  });

  it('writes as an ErrorResponse with S, V, C, M and the optional D and H', () => {
    const bytes = errorResponse(refusals.tlsRequired().fields);
    expect(bytes.toString('latin1', 0, 1)).to.equal('E');
    const fields = bytes.subarray(5, bytes.length - 1).toString('utf8').split('\0').filter(Boolean);
    expect(fields.map((field) => field[0])).to.deep.equal(['S', 'V', 'C', 'M', 'H']);
    expect(fields[2]).to.equal('C28000');
  });
});
