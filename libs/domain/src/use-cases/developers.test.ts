import { expect } from 'chai';
import { authenticateDeveloper, signUpDeveloper } from './developers.js';
import { failure } from './assertions.test-support.js';
import { fakePlatform, NOW } from './fakes.test-support.js';

const ADDRESS = '198.51.100.7';
const authenticationFailed = { name: 'UnauthenticatedError', kind: 'unauthenticated', code: 'authentication_failed', message: 'Email or password is incorrect' };

function tooManyAttempts(retryAfterSeconds: number) {
  return { name: 'RateLimitedError', kind: 'rate_limited', code: 'too_many_attempts', message: 'Too many failed attempts; try again later', retryAfterSeconds };
}

describe('developer account use cases', () => {
  describe('signUpDeveloper', () => {
    it('creates an account with the trimmed email and name and a hashed password', async () => {
      const { deps } = fakePlatform();
      const developer = await signUpDeveloper(deps, { email: ' ada@example.com ', password: 'correct horse', name: '  Ada  ' }, ADDRESS);
      expect(developer).to.deep.equal({ id: 'dev-1', email: 'ada@example.com', name: 'Ada', created: NOW });
      expect(deps.developers.rows[0].passwordHash).to.equal('hash:correct horse');
      expect(deps.throttle.spent).to.deep.equal([ADDRESS]);
    });

    it('stores no name when none, or only spaces, is given', async () => {
      const { deps } = fakePlatform();
      expect((await signUpDeveloper(deps, { email: 'ada@example.com', password: 'correct horse' }, ADDRESS)).name).to.equal(null);
      expect((await signUpDeveloper(deps, { email: 'bob@example.com', password: 'correct horse', name: '   ' }, ADDRESS)).name).to.equal(null);
    });

    it('refuses an email that is not one, a password outside 8 to 256 characters and a name over 255', async () => {
      const cases: [{ email: string; password: string; name?: string }, { code: string; message: string }][] = [
        [{ email: 'ada', password: 'correct horse' }, { code: 'invalid_email', message: 'Enter an email address such as ada@example.com' }],
        [{ email: `${'a'.repeat(65)}@example.com`, password: 'correct horse' }, { code: 'invalid_email', message: 'Enter an email address such as ada@example.com' }],
        [{ email: 'ada@example.com', password: '1234567' }, { code: 'invalid_password', message: 'Password must be 8 to 256 characters' }],
        [{ email: 'ada@example.com', password: 'x'.repeat(257) }, { code: 'invalid_password', message: 'Password must be 8 to 256 characters' }],
        [{ email: 'ada@example.com', password: 'correct horse', name: 'x'.repeat(256) }, { code: 'invalid_name', message: 'Name must be at most 255 characters' }],
      ];
      for (const [input, { code, message }] of cases) {
        const { deps } = fakePlatform();
        expect(await failure(signUpDeveloper(deps, input, ADDRESS)), code).to.deep.equal({ name: 'ValidationError', kind: 'validation', code, message });
        expect(deps.developers.rows).to.deep.equal([]);
      }
    });

    it('answers a taken email (any case) 409, as the page says', async () => {
      const { deps } = fakePlatform();
      await signUpDeveloper(deps, { email: 'ada@example.com', password: 'correct horse' }, ADDRESS);
      expect(await failure(signUpDeveloper(deps, { email: 'ADA@example.com', password: 'correct horse' }, ADDRESS))).to.deep.equal({
        name: 'ConflictError',
        kind: 'conflict',
        code: 'developer_exists',
        message: 'An account with this email already exists; sign in instead',
      });
    });

    it('answers 429 with the wait while the address has signed up too often, before any check or hash', async () => {
      const { deps } = fakePlatform();
      deps.throttle.waiting.set(ADDRESS, 120);
      expect(await failure(signUpDeveloper(deps, { email: 'not an email', password: 'x' }, ADDRESS))).to.deep.equal({ ...tooManyAttempts(120), message: 'Too many sign-ups from here; try again later' });
    });
  });

  describe('authenticateDeveloper', () => {
    async function withAda() {
      const p = fakePlatform();
      const ada = await signUpDeveloper(p.deps, { email: 'Ada@Example.com', password: 'correct horse' }, ADDRESS);
      await p.deps.developers.createWithPassword({ email: 'sso@example.com', name: null, passwordHash: null });
      p.deps.throttle.spent.length = 0;
      return { deps: p.deps, ada };
    }

    it('signs a developer in by any spelling of their email, throttled as their account from the address', async () => {
      const { deps, ada } = await withAda();
      expect(await authenticateDeveloper(deps, { email: ' ADA@example.com ', password: 'correct horse' }, ADDRESS)).to.deep.equal(ada);
      expect(deps.throttle.outcomes).to.deep.equal([{ subject: { account: `developer:${ada.id}`, address: ADDRESS }, ok: true }]);
      expect(deps.hasher.verifications).to.deep.equal(['verify:correct horse']);
    });

    it('hashes through the queue as the email typed and the address, no database (issue 46), giving every place back', async () => {
      const { deps } = await withAda();
      await authenticateDeveloper(deps, { email: ' ADA@example.com ', password: 'correct horse' }, ADDRESS);
      await failure(authenticateDeveloper(deps, { email: 'nobody@example.com', password: 'x' }, ADDRESS));
      expect(deps.hasher.claims).to.deep.equal([
        { account: 'developer-email:ada@example.com', address: ADDRESS },
        { account: 'developer-email:ada@example.com', address: ADDRESS },
        { account: 'developer-email:nobody@example.com', address: ADDRESS },
      ]);
      expect(deps.hasher.held).to.equal(0);
      deps.hasher.refuseWith = 2;
      expect(await failure(authenticateDeveloper(deps, { email: 'ada@example.com', password: 'correct horse' }, ADDRESS))).to.include({ code: 'too_many_attempts', retryAfterSeconds: 2 });
      expect(await failure(signUpDeveloper(deps, { email: 'grace@example.com', password: 'correct horse' }, ADDRESS))).to.include({ code: 'too_many_attempts', retryAfterSeconds: 2 });
      expect(deps.developers.rows.map((row) => row.developer.email)).to.deep.equal(['Ada@Example.com', 'sso@example.com']);
    });

    const long = 'p'.repeat(300);
    const cases: { what: string; email: string; password: string; verified: string }[] = [
      { what: 'an unknown email', email: 'nobody@example.com', password: 'correct horse', verified: 'verifyNothing:correct horse' },
      { what: 'a wrong password', email: 'ada@example.com', password: 'wrong horse', verified: 'verify:wrong horse' },
      { what: 'an account without a password', email: 'sso@example.com', password: 'correct horse', verified: 'verifyNothing:correct horse' },
      { what: 'an email that is not one', email: 'ada', password: 'correct horse', verified: 'verifyNothing:correct horse' },
      { what: 'a password too long for any account (verified only up to the limit)', email: 'ada@example.com', password: long, verified: `verifyNothing:${long.slice(0, 256)}` },
    ];
    for (const { what, email, password, verified } of cases) {
      it(`answers ${what} with the same 401, after exactly one verification`, async () => {
        const { deps } = await withAda();
        expect(await failure(authenticateDeveloper(deps, { email, password }, ADDRESS))).to.deep.equal(authenticationFailed);
        expect(deps.hasher.verifications).to.deep.equal([verified]);
        expect(deps.throttle.outcomes.map(({ ok }) => ok)).to.deep.equal([false]);
      });
    }

    it('throttles an unknown email by its typed spelling, as an account would be', async () => {
      const { deps } = await withAda();
      await failure(authenticateDeveloper(deps, { email: ' Nobody@Example.com', password: 'correct horse' }, ADDRESS));
      expect(deps.throttle.outcomes).to.deep.equal([{ subject: { account: 'developer-email:nobody@example.com', address: ADDRESS }, ok: false }]);
      deps.throttle.waiting.set('developer-email:nobody@example.com', 15);
      expect(await failure(authenticateDeveloper(deps, { email: 'nobody@example.com', password: 'correct horse' }, ADDRESS))).to.deep.equal(tooManyAttempts(15));
    });

    it('answers 429 while the address waits, without verifying anything', async () => {
      const { deps } = await withAda();
      deps.throttle.waiting.set(ADDRESS, 60);
      expect(await failure(authenticateDeveloper(deps, { email: 'bob@example.com', password: 'correct horse' }, ADDRESS))).to.deep.equal(tooManyAttempts(60));
      expect(deps.hasher.verifications).to.deep.equal([]);
    });

    it('answers 429 while the account waits, whatever spelling of its email is typed', async () => {
      const { deps, ada } = await withAda();
      deps.throttle.waiting.set(`developer:${ada.id}`, 45);
      expect(await failure(authenticateDeveloper(deps, { email: 'ADA@EXAMPLE.COM', password: 'correct horse' }, ADDRESS))).to.deep.equal(tooManyAttempts(45));
      expect(deps.hasher.verifications).to.deep.equal([]);
    });
  });
});
