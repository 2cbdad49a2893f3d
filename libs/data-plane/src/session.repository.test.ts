import { expect } from 'chai';
import { createHash } from 'node:crypto';
import type { DataPlaneRepositories, User } from '@platform/domain';
import { query } from '@platform/testing';
import { startScratchDataPlane, type ScratchDataPlane } from './scratch-data-plane.test.js';

describe('PgSessionRepository', function () {
  let plane: ScratchDataPlane;
  let url: string;
  let repos: DataPlaneRepositories;
  let user: User;

  before(async function () {
    plane = await startScratchDataPlane();
  });

  beforeEach(async function () {
    ({ url, repos } = await plane.newDatabase('sessions'));
    user = await repos.users.create({ email: 'session@example.test', passwordHash: 'h' });
  });

  after(async function () {
    await plane?.close();
  });

  it('create hands out a random token and stores only its digest, expiring after the ttl', async function () {
    const session = await repos.sessions.create(user.id, 600);
    expect(session.token).to.match(/^[A-Za-z0-9_-]{43}$/);
    expect(session.id).to.equal(createHash('sha256').update(session.token).digest('base64url'));
    const [row] = await query(url, `select id, user_id, extract(epoch from expires - created)::int as ttl_seconds, revoked from auth.sessions`);
    expect(row).to.deep.equal({ id: session.id, user_id: user.id, ttl_seconds: 600, revoked: null });
    expect(session.expires).to.be.instanceOf(Date);
    expect((await repos.sessions.create(user.id, 600)).token).to.not.equal(session.token);
  });

  it('findByToken finds the live session of a token, and nothing for any other token', async function () {
    const session = await repos.sessions.create(user.id, 600);
    expect(await repos.sessions.findByToken(session.token)).to.deep.equal({ id: session.id, userId: user.id, expires: session.expires });
    expect(await repos.sessions.findByToken(session.id)).to.equal(null);
    expect(await repos.sessions.findByToken('made-up')).to.equal(null);
  });

  it('a revoked session is neither found nor live; revoking again keeps the first time', async function () {
    const session = await repos.sessions.create(user.id, 600);
    expect(await repos.sessions.isLive(session.id, user.id)).to.equal(true);
    await repos.sessions.revoke(session.id);
    const [{ revoked }] = await query(url, 'select revoked from auth.sessions where id = $1', [session.id]);
    expect(revoked).to.be.instanceOf(Date);
    expect(await repos.sessions.findByToken(session.token)).to.equal(null);
    expect(await repos.sessions.isLive(session.id, user.id)).to.equal(false);
    await repos.sessions.revoke(session.id);
    expect(await query(url, 'select revoked from auth.sessions where id = $1', [session.id])).to.deep.equal([{ revoked }]);
  });

  it('an expired session is neither found nor live', async function () {
    const session = await repos.sessions.create(user.id, 600);
    await query(url, `update auth.sessions set expires = now() - interval '1 second' where id = $1`, [session.id]);
    expect(await repos.sessions.findByToken(session.token)).to.equal(null);
    expect(await repos.sessions.isLive(session.id, user.id)).to.equal(false);
  });

  it('a session is live for its own user only, and not once the user is deleted', async function () {
    const session = await repos.sessions.create(user.id, 600);
    const other = await repos.users.create({ email: 'other@example.test', passwordHash: 'h' });
    expect(await repos.sessions.isLive(session.id, other.id)).to.equal(false);
    await query(url, 'update users.users set deleted = now() where id = $1', [user.id]);
    expect(await repos.sessions.isLive(session.id, user.id)).to.equal(false);
    expect(await repos.sessions.findByToken(session.token)).to.equal(null);
  });
});
