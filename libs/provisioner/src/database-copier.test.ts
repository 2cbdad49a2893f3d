import { expect } from 'chai';
import { CopyImpossibleError, type Database } from '@platform/domain';
import { rejection } from '@platform/testing';
import { PointInTimeCopier } from './database-copier.js';

const WORKSPACE = { id: 'ws', name: 'W', slug: 'w', billingCustomerId: null, created: new Date(0) };

function database(overrides: Partial<Database>): Database {
  return {
    id: '00000000-0000-4000-8000-000000000001',
    workspace: WORKSPACE,
    name: 'orders',
    region: 'AWS_US_WEST_2',
    status: 'READY',
    physicalName: 'db_00000000000040008000000000000001',
    created: new Date(0),
    updated: new Date(0),
    deleted: null,
    ...overrides,
  };
}

describe('PointInTimeCopier', () => {
  it('refuses for good an instant from before the source came to the server that holds it now, touching nothing', async () => {
    const asked: string[] = [];
    const copier = new PointInTimeCopier({
      clusterAdminUrl: (region) => {
        asked.push(region);
        return 'postgres://postgres@127.0.0.1:1/postgres';
      },
      pgbackrest: '/nonexistent/pgbackrest',
      scratchDir: '/nonexistent/restores',
      mover: { move: async () => expect.fail('nothing is moved') },
      log: { info: () => {} },
    });
    const source = database({ servedSince: new Date('2026-01-02T00:00:00Z') });
    const target = database({ id: '00000000-0000-4000-8000-000000000002', name: 'copy', physicalName: 'db_00000000000040008000000000000002', status: 'REQUESTED' });
    const error = await rejection(copier.copy({ source, at: new Date('2026-01-01T23:59:59Z'), target }));
    expect(error).to.be.instanceOf(CopyImpossibleError);
    expect((error as Error).message).to.equal(
      'database orders moved to another server at 2026-01-02T00:00:00.000Z, after 2026-01-01T23:59:59.000Z: that instant cannot be restored from the backups of the server that holds it now',
    );
    expect(asked).to.deep.equal([]);
  });
});
