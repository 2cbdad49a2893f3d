import { Migration } from '@mikro-orm/migrations';

/**
 * Dedicated compute. An instance keeps snapshots of its current and desired types (the catalog is
 * configuration and may change). A database names its live instance (`instance_id`, one at most:
 * the update that sets it is the check) and, once its data has moved there, the server that holds
 * it (`server_host`, `server_port`; null on its region's cluster). `pending_drop` names a copy of
 * the database's data left behind by a move, dropped once no replica can still be using it.
 */
export class Migration20261123000000_compute extends Migration {
  override up(): void {
    this.addSql(`create table compute_instances (
      id uuid primary key,
      database_id uuid not null references databases (id) on delete cascade,
      name text not null,
      instance_type jsonb not null,
      desired_type jsonb not null,
      status text not null check (status in ('PENDING', 'PROVISIONING', 'READY', 'RESIZING', 'DELETING', 'FAILED', 'TERMINATED')),
      failure text,
      host text,
      port integer,
      pending_drop text check (pending_drop in ('cluster', 'instance')),
      drop_after timestamptz,
      created timestamptz not null default now(),
      updated timestamptz not null default now(),
      deleted timestamptz,
      attempts integer not null default 0,
      next_attempt_at timestamptz,
      last_error text
    )`);
    this.addSql(`create index compute_instances_database on compute_instances (database_id, created, id)`);
    this.addSql(`create index compute_instances_work on compute_instances (status) where status <> 'TERMINATED'`);
    this.addSql(`alter table databases add column instance_id uuid references compute_instances (id), add column server_host text, add column server_port integer`);
  }

  override down(): void {
    this.addSql(`alter table databases drop column instance_id, drop column server_host, drop column server_port`);
    this.addSql(`drop table compute_instances`);
  }
}
