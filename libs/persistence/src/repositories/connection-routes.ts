import type { MikroORM } from '@mikro-orm/postgresql';
import type { ConnectionRoute, ConnectionRoutes } from '@platform/domain';
import { CredentialEntity } from '../entities/credential.entity.js';

/** How long a database counts as moving after its move started. */
const MOVE_STALE_MS = 60_000;

/**
 * The gateway's lookup: one indexed read per login, no cache. Nothing here needs one to be safe (a
 * deleted credential's role is dropped on its cluster, which refuses it whatever the gateway
 * believes), and without one a renamed or deleted database is seen at the next login.
 */
export class ControlPlaneConnectionRoutes implements ConnectionRoutes {
  constructor(private readonly orm: MikroORM) {}

  async find(roleName: string): Promise<ConnectionRoute | null> {
    const row = await this.orm.em
      .fork()
      .findOne(CredentialEntity, { id: roleName, deleted: null, database: { deleted: null } }, { populate: ['database'] });
    if (!row) return null;
    const database = row.database;
    return {
      credentialId: row.id,
      tenantId: row.tenantId ?? null,
      database: {
        id: database.id,
        name: database.name,
        physicalName: database.physicalName,
        region: database.region,
        status: database.status,
        server: database.serverHost && database.serverPort ? { host: database.serverHost, port: database.serverPort } : null,
      },
      // A move that started long ago and never finished is a crashed one: its next run sets it again.
      moving: database.movingSince != null && Date.now() - database.movingSince.getTime() < MOVE_STALE_MS,
    };
  }
}
