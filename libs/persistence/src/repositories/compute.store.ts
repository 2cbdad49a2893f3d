import type { Transaction } from '@mikro-orm/core';
import type { MikroORM } from '@mikro-orm/postgresql';
import {
  ConflictError,
  INSTANCE_CANCEL_SLOTS,
  LIVE_COMPUTE_STATUSES,
  type Clock,
  type ComputeHealth,
  type ComputeInstance,
  type ComputeInstanceRepository,
  type ComputeInstanceStatus,
  type ComputeOutcome,
  type ComputeStore,
  type ComputeTask,
  type ComputeType,
  type InstanceWindow,
  type Region,
  type ServerAddress,
} from '@platform/domain';
import { isUniqueViolation } from '../errors.js';
import { claimWithBackoff, type BackoffOptions } from './claim-with-backoff.js';

interface InstanceRow {
  id: string;
  database_id: string;
  name: string;
  instance_type: ComputeType | string;
  desired_type: ComputeType | string;
  status: ComputeInstanceStatus;
  failure: string | null;
  health_status: ComputeHealth['status'] | null;
  health_reason: string | null;
  health_since: Date | string | null;
  host: string | null;
  port: number | null;
  pending_drop: 'cluster' | 'instance' | null;
  drop_after: Date | string | null;
  created: Date | string;
  updated: Date | string;
  deleted: Date | string | null;
  attempts: number;
}

const COLUMNS = `id, database_id, name, instance_type, desired_type, status, failure, health_status, health_reason, health_since, host, port, pending_drop, drop_after, created, updated, deleted, attempts`;
const LIVE = `(${LIVE_COMPUTE_STATUSES.map((status) => `'${status}'`).join(', ')})`;

const json = <T>(value: T | string): T => (typeof value === 'string' ? (JSON.parse(value) as T) : value);
const date = (value: Date | string) => new Date(value);

function toInstance(row: InstanceRow): ComputeInstance {
  return {
    id: row.id,
    databaseId: row.database_id,
    name: row.name,
    instanceType: json(row.instance_type),
    desiredInstanceType: json(row.desired_type),
    status: row.status,
    failure: row.failure,
    health: toHealth(row),
    created: date(row.created),
    updated: date(row.updated),
    deleted: row.deleted === null ? null : date(row.deleted),
  };
}

function toHealth(row: InstanceRow): ComputeHealth | null {
  return row.health_status === null || row.health_since === null ? null : { status: row.health_status, reason: row.health_reason, since: date(row.health_since) };
}

/**
 * Sets the health columns from `?` (status) and `?` (reason); `since` moves only when the status changes.
 * statement_timestamp(), not now(): inside a claim, now() is when its transaction began, before
 * the step ran (a step can take minutes), so a change would be dated before it happened.
 */
const SET_HEALTH = `health_status = ?, health_reason = ?,
  health_since = case when ?::text is null then null when health_status is not distinct from ?::text then health_since else statement_timestamp() end`;

/** The control plane's compute instances; every query names the database, the only way to reach one. */
export class SqlComputeInstances implements ComputeInstanceRepository {
  constructor(private readonly orm: MikroORM) {}

  private async rows(sql: string, params: unknown[]): Promise<ComputeInstance[]> {
    const rows = await this.orm.em.getConnection().execute<InstanceRow[]>(sql, params, 'all');
    return rows.map(toInstance);
  }

  async create(input: { id: string; databaseId: string; name: string; type: ComputeType }): Promise<ComputeInstance> {
    const type = JSON.stringify(input.type);
    // One statement: the instance exists only if the database had none, and the database names it;
    // it takes the lowest free cancel slot (two creations racing for one: the loser tries again).
    let created: ComputeInstance | undefined;
    for (let attempt = 1; ; attempt++) {
      try {
        [created] = await this.rows(
          `with claimed as (
             update databases set instance_id = ? where id = ? and instance_id is null and deleted is null returning id
           )
           insert into compute_instances (id, database_id, name, instance_type, desired_type, status, cancel_slot)
           select ?, claimed.id, ?, ?::jsonb, ?::jsonb, 'PENDING',
             (select min(slot) from generate_series(?::int, ?::int) slot
               where not exists (select 1 from compute_instances taken where taken.cancel_slot = slot and taken.status <> 'TERMINATED'))
           from claimed
           returning ${COLUMNS}`,
          [input.id, input.databaseId, input.id, input.name, type, type, INSTANCE_CANCEL_SLOTS.first, INSTANCE_CANCEL_SLOTS.last],
        );
        break;
      } catch (error) {
        if (attempt >= 5 || !isUniqueViolation(error, 'compute_instances_cancel_slot')) throw error;
      }
    }
    if (!created) {
      throw new ConflictError('compute_instance_exists', 'The database already has a compute instance: resize it, or delete it first');
    }
    return created;
  }

  listForDatabase(databaseId: string, window: InstanceWindow): Promise<ComputeInstance[]> {
    return this.rows(
      `select ${COLUMNS} from compute_instances
       where database_id = ? and (?::timestamptz is null or created <= ?::timestamptz) and (?::timestamptz is null or deleted is null or deleted >= ?::timestamptz)
       order by created, id`,
      [databaseId, window.end ?? null, window.end ?? null, window.start ?? null, window.start ?? null],
    );
  }

  async find(databaseId: string, id: string): Promise<ComputeInstance | null> {
    const [found] = await this.rows(`select ${COLUMNS} from compute_instances where database_id = ? and id = ?`, [databaseId, id]);
    return found ?? null;
  }

  async update(databaseId: string, id: string, changes: { name?: string; desiredType?: ComputeType }): Promise<ComputeInstance | null> {
    const [updated] = await this.rows(
      `update compute_instances set name = coalesce(?, name), desired_type = coalesce(?::jsonb, desired_type), updated = now(),
         attempts = 0, next_attempt_at = null
       where database_id = ? and id = ? and status in ('PENDING', 'PROVISIONING', 'READY', 'RESIZING', 'FAILED') returning ${COLUMNS}`,
      [changes.name ?? null, changes.desiredType ? JSON.stringify(changes.desiredType) : null, databaseId, id],
    );
    return updated ?? null;
  }

  async markDeleting(databaseId: string, id: string): Promise<ComputeInstance | null> {
    const [marked] = await this.rows(
      `update compute_instances set status = case when status in ('DELETING', 'TERMINATED') then status else 'DELETING' end,
         updated = case when status in ('DELETING', 'TERMINATED') then updated else now() end, attempts = 0, next_attempt_at = null
       where database_id = ? and id = ? returning ${COLUMNS}`,
      [databaseId, id],
    );
    return marked ?? null;
  }
}

/** The longest wait between two attempts at one instance. */
const RETRY_CAP_MS = 30_000;

/**
 * Claims instances that need work with FOR UPDATE SKIP LOCKED (several API replicas share the
 * work), runs the step while holding the row, and persists its outcome in the same transaction;
 * a step that throws leaves the row as it was, with a retry time.
 */
export class SqlComputeStore implements ComputeStore {
  private readonly backoff: BackoffOptions;

  constructor(
    private readonly orm: MikroORM,
    private readonly clock: Clock,
  ) {
    this.backoff = {
      orm,
      clock,
      table: 'compute_instances',
      retryCapMs: RETRY_CAP_MS,
      // A move that failed resumed its source: logins need not wait for it.
      onFailure: (id) =>
        orm.em.getConnection().execute(`update databases set moving_since = null where id = (select database_id from compute_instances where id = ?)`, [id], 'run').then(() => undefined),
    };
  }

  async claim(work: (task: ComputeTask) => Promise<ComputeOutcome>, options: { instanceId?: string } = {}): Promise<boolean> {
    return claimWithBackoff(this.backoff, async (tx, claimed) => {
      const connection = tx.getConnection();
      const ctx = tx.getTransactionContext();
      // A deleted database that can still be restored keeps its instance as it is (its server runs,
      // the database on it refuses connections): no step of an instance needs it closed, and a move
      // could not copy it. Once purged (its drop recorded), the instance goes too.
      const [row] = await connection.execute<(InstanceRow & { physical_name: string; region: Region; db_dropped: Date | null; server_host: string | null; server_port: number | null })[]>(
        `select i.${COLUMNS.split(', ').join(', i.')}, d.physical_name, d.region, d.dropped as db_dropped, d.server_host, d.server_port
         from compute_instances i join databases d on d.id = i.database_id
         where (?::uuid is null or i.id = ?::uuid)
           and (d.deleted is null or d.dropped is not null)
           and (i.status in ('PENDING', 'PROVISIONING', 'RESIZING', 'DELETING')
             or (i.status = 'READY' and i.desired_type ->> 'id' <> i.instance_type ->> 'id')
             or (i.status in ${LIVE} and d.dropped is not null and i.status <> 'DELETING')
             or (i.pending_drop is not null and i.drop_after <= ?))
           and (i.next_attempt_at is null or i.next_attempt_at <= ?)
         order by i.updated limit 1
         for update of i skip locked`,
        [options.instanceId ?? null, options.instanceId ?? null, this.clock.now(), this.clock.now()],
        'all',
        ctx,
      );
      if (!row) return;
      claimed(row.id);
      const task: ComputeTask = {
        instance: toInstance(row),
        database: {
          id: row.database_id,
          physicalName: row.physical_name,
          region: row.region,
          purged: row.db_dropped !== null,
          server: row.server_host && row.server_port ? { host: row.server_host, port: row.server_port } : null,
        },
        server: row.host && row.port ? { host: row.host, port: row.port } : null,
        pendingDrop: row.pending_drop,
        dropAfter: row.drop_after === null ? null : date(row.drop_after),
        attempts: row.attempts,
      };
      const outcome = await work(task);
      await this.persist(connection, ctx, task, outcome);
    });
  }

  private async persist(connection: ReturnType<MikroORM['em']['getConnection']>, ctx: Transaction | undefined, task: ComputeTask, outcome: ComputeOutcome): Promise<void> {
    const status = outcome.status ?? task.instance.status;
    const server = outcome.server === undefined ? task.server : outcome.server;
    const pendingDrop = outcome.pendingDrop === undefined ? (task.pendingDrop ? { copy: task.pendingDrop, after: task.dropAfter } : null) : outcome.pendingDrop;
    const health = outcome.health === undefined ? task.instance.health : outcome.health;
    await connection.execute(
      `update compute_instances set status = ?, instance_type = coalesce(?::jsonb, instance_type), failure = ?, ${SET_HEALTH}, host = ?, port = ?,
         pending_drop = ?, drop_after = ?, updated = statement_timestamp(),
         deleted = case when ? = 'TERMINATED' then coalesce(deleted, statement_timestamp()) else deleted end,
         attempts = 0, next_attempt_at = null, last_error = null
       where id = ?`,
      [
        status,
        outcome.instanceType ? JSON.stringify(outcome.instanceType) : null,
        outcome.failure === undefined ? task.instance.failure : outcome.failure,
        health?.status ?? null,
        health?.reason ?? null,
        health?.status ?? null,
        health?.status ?? null,
        server?.host ?? null,
        server?.port ?? null,
        pendingDrop?.copy ?? null,
        pendingDrop?.after ?? null,
        status,
        task.instance.id,
      ],
      'run',
      ctx,
    );
    if (outcome.databaseServer !== undefined) {
      // A switch between the cluster and the instance (not a resize, which restarts the same data), dated when the step ended:
      // another server holds its data from now, whose backups know it from now.
      const host = outcome.databaseServer?.host ?? null;
      await connection.execute(
        `update databases set server_host = ?, server_port = ?, served_since = case when (server_host is null) <> (?::text is null) then statement_timestamp() else served_since end where id = ?`,
        [host, outcome.databaseServer?.port ?? null, host, task.database.id],
        'run',
        ctx,
      );
    }
    await connection.execute(`update databases set moving_since = null where id = ? and moving_since is not null`, [task.database.id], 'run', ctx);
    if (status === 'TERMINATED') {
      await connection.execute(`update databases set instance_id = null where id = ? and instance_id = ?`, [task.database.id, task.instance.id], 'run', ctx);
    }
  }

  /** READY instances, whose server should run (a resize's own step restarts the server it stopped). */
  async serving(): Promise<{ id: string; type: ComputeType; server: ServerAddress | null; health: ComputeHealth | null }[]> {
    const rows = await this.orm.em.getConnection().execute<InstanceRow[]>(`select ${COLUMNS} from compute_instances where status = 'READY'`, [], 'all');
    return rows.map((row) => ({ id: row.id, type: json(row.instance_type), server: row.host && row.port ? { host: row.host, port: row.port } : null, health: toHealth(row) }));
  }

  async recordHealth(instanceId: string, health: Omit<ComputeHealth, 'since'>): Promise<void> {
    // READY only: a step that holds the row (a resize, a delete) says its own health with its outcome.
    // A change of the health's status is a change of the instance: `updated` moves with it.
    await this.orm.em
      .getConnection()
      .execute(
        `update compute_instances set updated = case when health_status is distinct from ?::text then statement_timestamp() else updated end, ${SET_HEALTH}
         where id = ? and status = 'READY'`,
        [health.status, health.status, health.reason, health.status, health.status, instanceId],
      );
  }

  async markMoving(databaseId: string): Promise<void> {
    await this.orm.em.getConnection().execute(`update databases set moving_since = now() where id = ?`, [databaseId]);
  }

  async relocated(instanceId: string, address: ServerAddress): Promise<void> {
    const connection = this.orm.em.getConnection();
    await connection.execute(`update compute_instances set host = ?, port = ? where id = ?`, [address.host, address.port, instanceId]);
    await connection.execute(`update databases set server_host = ?, server_port = ? where instance_id = ? and server_host is not null`, [address.host, address.port, instanceId]);
  }

  /** Ids of instances that are TERMINATED or unknown, among those given (files left behind). */
  async forgotten(ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const rows = await this.orm.em.getConnection().execute<{ id: string }[]>(
      `select id from compute_instances where id in (select jsonb_array_elements_text(?::jsonb)::uuid) and status <> 'TERMINATED'`,
      [JSON.stringify(ids)],
      'all',
    );
    const live = new Set(rows.map((row) => row.id));
    return ids.filter((id) => !live.has(id));
  }
}
