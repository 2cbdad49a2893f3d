// The baseline of tools/bench/hot-path.ts and scale.ts: a bare Koa app that verifies the bearer JWT
// with jose and runs one query per request on a pg pool: a primary-key lookup of NAIVE_TENANT_ID, or
// with NAIVE_QUERY=member-tenants the token subject's tenants as the API presents them. Started by
// the benchmark as a process of its own; listens on 127.0.0.1 only; stops on SIGTERM.
import { importJWK, jwtVerify, type JWK } from 'jose';
import Koa from 'koa';
import pg from 'pg';

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

const memberTenants = process.env.NAIVE_QUERY === 'member-tenants';
const tenantId = memberTenants ? '' : required('NAIVE_TENANT_ID');
const jwk = JSON.parse(required('NAIVE_PUBLIC_JWK')) as JWK;
const key = await importJWK(jwk, 'ES256');
const pool = new pg.Pool({ connectionString: required('NAIVE_DATABASE_URL'), max: Number(required('NAIVE_POOL_SIZE')) });
const app = new Koa();
app.use(async (ctx) => {
  if (ctx.path === '/ready') {
    ctx.body = { ok: true };
    return;
  }
  const bearer = /^Bearer (.+)$/.exec(ctx.get('authorization'));
  let subject: string | undefined;
  try {
    if (!bearer) throw new Error('no bearer token');
    ({ payload: { sub: subject } } = await jwtVerify(bearer[1], key, { algorithms: ['ES256'], issuer: required('NAIVE_ISSUER'), audience: required('NAIVE_AUDIENCE'), typ: 'at+jwt' }));
  } catch {
    ctx.status = 401;
    ctx.body = { errorCode: 'invalid_token' };
    return;
  }
  if (memberTenants) {
    const { rows } = await pool.query<{ id: string; name: string | null; created: Date; updated: Date }>(
      `select t.id, t.name, t.created, t.updated from public.tenants t join users.tenant_users tu on tu.tenant_id = t.id
       where tu.user_id = $1 and t.deleted is null order by t.created, t.id`,
      [subject],
    );
    ctx.body = rows.map((row) => ({ id: row.id, name: row.name, created: row.created.toISOString(), updated: row.updated.toISOString() }));
    return;
  }
  const { rows } = await pool.query<{ id: string; name: string | null }>('select id, name from tenants where id = $1', [tenantId]);
  ctx.body = rows;
});
const server = app.listen(Number(required('NAIVE_PORT')), '127.0.0.1');
const stop = () => {
  server.close();
  server.closeAllConnections();
  void pool.end().finally(() => process.exit(0));
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
