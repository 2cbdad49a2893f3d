import type { MikroORM } from '@mikro-orm/postgresql';
import type { ConnectionRoute, ConnectionRoutes } from '@platform/domain';
import { CredentialEntity } from '../entities/credential.entity.js';
import { isMoving } from './mappers.js';

/** What a route takes from a database's compute instance. */
interface InstanceRoute {
  cancel_slot: number | null;
  max_connections: number | null;
}

/**
 * The gateway's lookup: one indexed read per login (two for a database on a compute instance: its
 * cancel slot and its type's connections), no cache. Nothing here needs one to be safe (a deleted
 * credential's role is dropped on its server, which refuses it whatever the gateway believes), and
 * without one a renamed, deleted or moved database is seen at the next login.
 */
export class ControlPlaneConnectionRoutes implements ConnectionRoutes {
  constructor(private readonly orm: MikroORM) {}

  async find(roleName: string): Promise<ConnectionRoute | null> {
    const row = await this.orm.em
      .fork()
      .findOne(CredentialEntity, { id: roleName, deleted: null, database: { deleted: null } }, { populate: ['database'] });
    if (!row) return null;
    const database = row.database;
    const onInstance = database.serverHost != null && database.instanceId != null;
    // The instance's type as it runs now (a resize changes it once done): its server's max_connections.
    const [instance] = onInstance
      ? await this.orm.em
          .getConnection()
          .execute<InstanceRoute[]>(`select cancel_slot, (instance_type ->> 'maxConnections')::int as max_connections from compute_instances where id = ?`, [database.instanceId])
      : [];
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
      moving: isMoving(database.movingSince),
      cancelSlot: instance?.cancel_slot ?? null,
      connectionLimit: instance?.max_connections ?? null,
    };
  }

  async findInstanceBySlot(slot: number): Promise<{ host: string; port: number } | null> {
    const [row] = await this.orm.em
      .getConnection()
      .execute<{ host: string | null; port: number | null }[]>(`select host, port from compute_instances where cancel_slot = ? and status <> 'TERMINATED'`, [slot]);
    return row?.host && row.port ? { host: row.host, port: row.port } : null;
  }
}
