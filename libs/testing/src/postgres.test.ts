import { expect } from 'chai';
import { createScratchDatabase, databaseExists, dropScratchDatabase, query, startTestPostgres, withClient, type TestPostgres } from './postgres.js';

describe('test PostgreSQL', function () {
  let server: TestPostgres;

  before(async function () {
    server = await startTestPostgres();
  });

  after(async function () {
    await server?.stop();
  });

  it('creates scratch databases with unique names under the prefix, and drops them (twice is fine)', async function () {
    const [one, two] = [await createScratchDatabase(server, 'helpers'), await createScratchDatabase(server, 'helpers')];
    expect(one.name).to.match(/^helpers_[0-9a-f]{10}$/);
    expect(two.name).to.not.equal(one.name);
    expect(one.url).to.equal(server.urlFor(one.name));
    expect(await query(one.url, 'select current_database() as name')).to.deep.equal([{ name: one.name }]);

    expect(await withClient(one.url, async (client) => (await client.query('select 1 as one')).rows)).to.deep.equal([{ one: 1 }]);

    await dropScratchDatabase(server, one.name);
    expect(await databaseExists(server.adminUrl, one.name)).to.equal(false);
    expect(await databaseExists(server.adminUrl, two.name)).to.equal(true);
    await dropScratchDatabase(server, two.name);
    await dropScratchDatabase(server, two.name);
    expect(await databaseExists(server.adminUrl, two.name)).to.equal(false);
  });

  it('query() binds parameters and returns the rows', async function () {
    expect(await query<{ sum: number }>(server.adminUrl, 'select $1::int + $2::int as sum', [2, 3])).to.deep.equal([{ sum: 5 }]);
    expect(await query(server.adminUrl, 'select 1 where false')).to.deep.equal([]);
  });
});
