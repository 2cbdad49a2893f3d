// The baseline of tools/bench/hot-path.ts: a bare Koa app that verifies the bearer JWT with jose and
// runs one primary-key query per request on a pg pool. Started by the benchmark as a process of its
// own; listens on 127.0.0.1 only; stops on SIGTERM.
import { importJWK, jwtVerify, type JWK } from 'jose';
import Koa from 'koa';
import pg from 'pg';

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

const tenantId = required('NAIVE_TENANT_ID');
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
  try {
    if (!bearer) throw new Error('no bearer token');
    await jwtVerify(bearer[1], key, { algorithms: ['ES256'], issuer: required('NAIVE_ISSUER'), audience: required('NAIVE_AUDIENCE'), typ: 'at+jwt' });
  } catch {
    ctx.status = 401;
    ctx.body = { errorCode: 'invalid_token' };
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
