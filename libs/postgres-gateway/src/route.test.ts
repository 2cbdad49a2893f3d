import { expect } from 'chai';
import type { ConnectionRoute } from '@platform/domain';
import type { Backend } from './backends.js';
import { MAX_STARTUP_PACKET_LENGTH, parseStartupPacket } from './protocol.js';
import { decideRoute, type RouteDecision } from './route.js';
import type { LoginRequest } from './startup.js';

const ROLE = 'cred_abcdefghijklmnopqrst';
const PHYSICAL = 'db_0123456789abcdef0123456789abcdef';
const TENANT = '0b2f0f6e-7f1e-4d8a-9b0e-3f2c1d4e5a6b';
const CLUSTERS: Backend[] = [
  { host: 'west.internal', port: 5432, index: 1 },
  { host: 'central.internal', port: 5433, index: 2 },
];

function login(overrides: Partial<LoginRequest> = {}): LoginRequest {
  const parameters = new Map([
    ['user', ROLE],
    ['database', 'shop'],
    ['application_name', 'psql'],
  ]);
  return { user: ROLE, database: 'shop', parameters, tenantId: null, options: [], protocolVersion: 0x0003_0000, ...overrides };
}

function route(overrides: Partial<ConnectionRoute> = {}, database: Partial<ConnectionRoute['database']> = {}): ConnectionRoute {
  return {
    credentialId: ROLE,
    tenantId: null,
    database: { id: 'd1', name: 'shop', physicalName: PHYSICAL, region: 'AWS_EU_CENTRAL_1', status: 'READY', ...database },
    ...overrides,
  };
}

function routed(decision: RouteDecision): Extract<RouteDecision, { kind: 'routed' }> {
  if (decision.kind !== 'routed') throw new Error(`expected a routed login, got ${decision.kind}`);
  return decision;
}

/** The parameters of the startup packet the decision sends to the cluster. */
function forwarded(decision: RouteDecision): Record<string, string> {
  const packet = parseStartupPacket(routed(decision).startup);
  if (packet.kind !== 'startup') throw new Error(`not a startup packet: ${packet.kind}`);
  return Object.fromEntries(packet.parameters);
}

describe('decideRoute: where a login goes, from its startup parameters and its route', () => {
  it('sends a credential of a database on a region’s cluster to that cluster, as its role and physical database', () => {
    const decision = routed(decideRoute(login(), route(), CLUSTERS));
    expect(decision.backend).to.deep.equal(CLUSTERS[1]);
    expect(decision.refusalOnceAuthenticated).to.equal(null);
    expect(forwarded(decision)).to.deep.equal({ user: ROLE, database: PHYSICAL, application_name: 'psql' });
  });

  it('sends a database on a compute instance to the instance’s server, with the instance’s cancel slot (0 without one)', () => {
    const server = { host: 'instance.internal', port: 6000 };
    expect(routed(decideRoute(login(), route({ cancelSlot: 17 }, { server }), CLUSTERS)).backend).to.deep.equal({ ...server, index: 17 });
    expect(routed(decideRoute(login(), route({}, { server }), CLUSTERS)).backend).to.deep.equal({ ...server, index: 0 });
  });

  it('leaves a name without a route to the exchange that cannot succeed', () => {
    expect(decideRoute(login({ user: 'postgres' }), null, CLUSTERS)).to.deep.equal({ kind: 'unknown' });
  });

  it('puts the named tenant into the options for an unscoped credential, and checks it', () => {
    const decision = routed(decideRoute(login({ tenantId: TENANT, options: ['-c', 'work_mem=64MB'] }), route(), CLUSTERS));
    expect(forwarded(decision).options).to.equal(`-c work_mem=64MB -c platform.tenant_id=${TENANT}`);
    expect(decision.tenantToCheck).to.equal(TENANT);
    expect(decision.tenantId).to.equal(TENANT);
    // Under the name the client gave it.
    const alias = routed(decideRoute(login({ tenantId: TENANT, tenantSetting: 'nile.tenant_id' }), route(), CLUSTERS));
    expect(forwarded(alias).options).to.equal(`-c nile.tenant_id=${TENANT}`);
  });

  it('gives a scoped credential its own tenant, whatever the login names, and checks none', () => {
    const own = '11111111-2222-4333-8444-555555555555';
    const decision = routed(decideRoute(login({ tenantId: TENANT }), route({ tenantId: own }), CLUSTERS));
    expect(forwarded(decision)).to.not.have.property('options');
    expect(decision.tenantToCheck).to.equal(null);
    expect(decision.tenantId).to.equal(own);
  });

  it('asks the cluster for the protocol version the client’s session speaks (3.2: the server’s long cancel key)', () => {
    for (const protocolVersion of [0x0003_0000, 0x0003_0002]) {
      const packet = parseStartupPacket(routed(decideRoute(login({ protocolVersion }), route(), CLUSTERS)).startup);
      expect(packet.kind === 'startup' && packet.version).to.equal(protocolVersion);
    }
  });

  it('passes on no parameter the gateway sets or refuses itself, nor the client’s protocol options', () => {
    const parameters = new Map([
      ['user', ROLE],
      ['database', 'shop'],
      ['replication', 'false'],
      ['_pq_.compression', 'on'],
      ['platform.tenant_id', TENANT],
      ['DateStyle', 'ISO'],
    ]);
    expect(forwarded(decideRoute(login({ parameters, tenantId: TENANT }), route(), CLUSTERS))).to.deep.equal({
      user: ROLE,
      database: PHYSICAL,
      options: `-c platform.tenant_id=${TENANT}`,
      DateStyle: 'ISO',
    });
  });

  it('refuses another database’s name, or a database not ready, only once the password is accepted', () => {
    const other = routed(decideRoute(login({ database: 'other' }), route(), CLUSTERS));
    expect(other.refusalOnceAuthenticated?.fields).to.deep.equal({ severity: 'FATAL', code: '3D000', message: 'database "other" does not exist' });
    const building = routed(decideRoute(login(), route({}, { status: 'BUILT' }), CLUSTERS));
    expect(building.refusalOnceAuthenticated?.fields).to.include({ code: '57P03', message: 'database "shop" is not ready yet' });
  });

  it('refuses a packet that would be too long once routed, for a real name and an unknown one alike', () => {
    // Short enough as sent; the physical name and the tenant setting take it over the limit.
    const filler = 'x'.repeat(MAX_STARTUP_PACKET_LENGTH - 120);
    const parameters = new Map([
      ['user', ROLE],
      ['application_name', filler],
    ]);
    const tooLong = login({ parameters, tenantId: TENANT });
    for (const decision of [decideRoute(tooLong, route(), CLUSTERS), decideRoute(tooLong, null, CLUSTERS)]) {
      expect(decision.kind).to.equal('refused');
      if (decision.kind === 'refused') expect(decision.refusal.fields).to.include({ code: '08P01', message: 'invalid length of startup packet' });
    }
    // A scoped credential's packet is measured with the tenant setting too, so that the check tells nothing about the scope.
    expect(decideRoute(tooLong, route({ tenantId: TENANT }), CLUSTERS).kind).to.equal('refused');
    expect(decideRoute(login({ parameters }), route(), CLUSTERS).kind).to.equal('routed');
  });
});
