import { refuseIsolationBypassFunction } from './isolation-guards.js';
import { REQUIRED_UNSCOPED_TENANT_POLICY, UNSCOPED_TENANT_POLICY } from './tenant-context-step.js';
import { REQUIRED_TENANT_POLICY, TENANT_POLICY } from './tenant-context.js';

/** The event trigger of step 14 (after the deny_... guards in the order PostgreSQL fires them: by name). */
export const RESTORE_ISOLATION_TRIGGER = 'restore_tenant_isolation_on_drop';

/**
 * Step 14: what a schema tool does to the platform's isolation of a tenant-aware table is put back
 * within the same statement, instead of failing the statement. `drizzle-kit push` diffs the live
 * database against the schema file, sees row-level security and four policies the file does not
 * declare, and runs `ALTER TABLE ... DISABLE ROW LEVEL SECURITY` and `DROP POLICY` for each on every
 * push after the first; steps 4 to 13 refused those, so every later push failed.
 *   - The guard (platform.refuse_isolation_bypass) no longer refuses dropping one of the platform's
 *     four policies, or turning row-level security off or unforcing it, on a table that still has
 *     its live tenant_id column. Dropping any other policy of a tenant-aware table, dropping the
 *     platform's policies with the column (`drop column tenant_id cascade`), ALTER POLICY and
 *     CREATE POLICY stay refused.
 *   - The ALTER TABLE is undone at ddl_command_end by enforce_tenant_isolation (which already
 *     re-secured a superuser's ALTER TABLE). A dropped policy is re-created at sql_drop, by
 *     platform.restore_tenant_isolation(), as the platform's function does for a new table
 *     (secure_tenant_table, then open_tenant_table binding the roles).
 * The statement holds its table's ACCESS EXCLUSIVE lock until its transaction ends, and the
 * isolation is back before the statement returns: no other session, and no later statement of the
 * same session, sees the table without it.
 */
export const RESTORE_ISOLATION_STEP = `
  ${refuseIsolationBypassFunction(true)}

  create function platform.restore_tenant_isolation() returns event_trigger
    language plpgsql security definer
    set search_path = pg_catalog, pg_temp
  as $function$
  declare
    dropped record;
  begin
    for dropped in
      select distinct to_regclass(format('%I.%I', address_names[1], address_names[2]))::oid as relation
        from pg_catalog.pg_event_trigger_dropped_objects()
       where object_type = 'policy'
         and address_names[3] in ('${TENANT_POLICY}', '${REQUIRED_TENANT_POLICY}', '${UNSCOPED_TENANT_POLICY}', '${REQUIRED_UNSCOPED_TENANT_POLICY}')
    loop
      -- A policy dropped with its table leaves no table; one dropped with tenant_id leaves no
      -- tenant-aware table (and the guard refused that before this runs): both functions skip it.
      continue when dropped.relation is null;
      perform platform.secure_tenant_table(dropped.relation, false);
      perform platform.open_tenant_table(dropped.relation);
    end loop;
  end
  $function$;
  revoke all on function platform.restore_tenant_isolation() from public;

  create event trigger ${RESTORE_ISOLATION_TRIGGER} on sql_drop
    execute function platform.restore_tenant_isolation();
`;
