import { DATABASE_ROLE_SUFFIXES } from './database-roles.js';
import { UNTOUCHED_SCHEMAS } from './tenant-context.js';

/**
 * The extensions a credential may create (CREATE EXTENSION needs CREATE on the database, which
 * unscoped credentials have from step 13): the embedded server's trusted contrib extensions that
 * reach nothing outside the database, and pgvector (`vector`, when the server has it). Left out:
 * everything PostgreSQL does not mark trusted (dblink, postgres_fdw, file_fdw, adminpack, the
 * untrusted languages; earthdistance, which PostgreSQL 18 does not mark trusted either), the
 * trusted languages plperl and pltcl (a whole interpreter for a credential to reach), `lo` and
 * `tcn` (nothing a credential lacks without them; tcn would NOTIFY every listener of a row's key).
 */
export const EXTENSION_ALLOWLIST = [
  'btree_gin',
  'btree_gist',
  'citext',
  'cube',
  'dict_int',
  'fuzzystrmatch',
  'hstore',
  'intarray',
  'isn',
  'ltree',
  'pg_trgm',
  'pgcrypto',
  'plpgsql',
  'seg',
  'tablefunc',
  'tsm_system_rows',
  'tsm_system_time',
  'unaccent',
  'uuid-ossp',
  'vector',
] as const;

for (const name of EXTENSION_ALLOWLIST) {
  if (!/^[a-z_][a-z0-9_-]*$/.test(name)) throw new Error(`unexpected extension name '${name}'`);
}

const ALLOWLIST_SQL = `array[${EXTENSION_ALLOWLIST.map((name) => `'${name}'`).join(', ')}]::text[]`;

/** PL/pgSQL: refuse the extension named by `name` (a text expression) when it is not on the list. */
function refuseOutsideAllowlist(name: string): string {
  return `if not ${name} = any (${ALLOWLIST_SQL}) then
        raise exception using
          errcode = 'insufficient_privilege',
          message = pg_catalog.format('extension "%s" is not available in a platform database', ${name}),
          detail = 'Credentials may create these extensions: ${EXTENSION_ALLOWLIST.join(', ')}.',
          hint = 'Extensions that reach outside the database (dblink, postgres_fdw, file_fdw, adminpack, untrusted languages) are not offered.';
      end if;`;
}

/** PL/pgSQL declarations of the two role names the step uses, every built-in qualified. */
const ROLES = `
    owner_role name := pg_catalog.current_database() || '${DATABASE_ROLE_SUFFIXES.owner}';
    scoped_role name := pg_catalog.current_database() || '${DATABASE_ROLE_SUFFIXES.scoped}';`;

/** SQL: does `relation` (an oid expression) have a live tenant_id column. */
function hasTenantColumn(relation: string): string {
  return `exists (select from pg_catalog.pg_attribute ta
                   where ta.attrelid = ${relation} and ta.attname = 'tenant_id' and ta.attnum > 0 and not ta.attisdropped)`;
}

/**
 * Step 13: schemas and extensions.
 *   - Unscoped credentials (`<db>_owner`) get CREATE on the database: they create schemas (an ORM's
 *     migration table, a schema per module) and the allowed extensions. What they create in any
 *     schema of theirs is handed to the owner role as in public (step 4's hand-over, now for every
 *     schema outside auth and platform, schemas included), so every credential of the database
 *     uses it and scoped credentials get USAGE on the schema and what step 11 gives them of its
 *     tables. Tenant-aware tables there were already isolated (steps 2 to 12 secure every schema
 *     but auth, platform and the system's).
 *   - CREATE EXTENSION (and CREATE LANGUAGE, which PostgreSQL turns into it for a language that
 *     comes as an extension) by anyone but a superuser is held to EXTENSION_ALLOWLIST: at
 *     ddl_command_start, from the names the statement's text gives (so that an untrusted extension
 *     is refused with the list rather than PostgreSQL's "must be superuser"); at ddl_command_end,
 *     from the catalog (whatever the text hid, CASCADE included), which undoes the statement.
 */
export const SCHEMAS_AND_EXTENSIONS_STEP = `
  do $grant$
  declare
    ${ROLES}
  begin
    execute pg_catalog.format('grant create on database %I to %I', pg_catalog.current_database(), owner_role);
  end
  $grant$;

  create function platform.refuse_extension_outside_allowlist() returns event_trigger
    language plpgsql
    -- Runs with the caller's rights: pin the search path so no object of theirs is picked up.
    set search_path = pg_catalog, pg_temp
  as $function$
  declare
    found_name text[];
    extension_name text;
    command record;
  begin
    if (select rolsuper from pg_catalog.pg_roles where rolname = current_user) then
      return;
    end if;
    if tg_event = 'ddl_command_start' then
      for found_name in
        select pg_catalog.regexp_matches(pg_catalog.current_query(),
          'create\\s+(?:extension\\s+(?:if\\s+not\\s+exists\\s+)?|(?:or\\s+replace\\s+)?(?:trusted\\s+)?(?:procedural\\s+)?language\\s+)("(?:[^"]|"")+"|[a-z_][a-z0-9_$]*)', 'gi')
      loop
        extension_name := case when pg_catalog.left(found_name[1], 1) = '"'
          then pg_catalog.replace(pg_catalog.substr(found_name[1], 2, pg_catalog.length(found_name[1]) - 2), '""', '"')
          else pg_catalog.lower(found_name[1]) end;
        ${refuseOutsideAllowlist('extension_name')}
      end loop;
      return;
    end if;
    for command in
      select e.extname::text as name from pg_catalog.pg_event_trigger_ddl_commands() c
        join pg_catalog.pg_extension e on e.oid = c.objid
       where c.classid = 'pg_catalog.pg_extension'::pg_catalog.regclass
      union all
      select l.lanname::text from pg_catalog.pg_event_trigger_ddl_commands() c
        join pg_catalog.pg_language l on l.oid = c.objid
       where c.classid = 'pg_catalog.pg_language'::pg_catalog.regclass
    loop
      ${refuseOutsideAllowlist('command.name')}
    end loop;
  end
  $function$;
  revoke all on function platform.refuse_extension_outside_allowlist() from public;
  -- CREATE LANGUAGE of a language that comes as an extension (plperl, pltcl) is CREATE EXTENSION
  -- under another tag.
  create event trigger deny_extensions_outside_allowlist on ddl_command_start
    when tag in ('CREATE EXTENSION', 'CREATE LANGUAGE')
    execute function platform.refuse_extension_outside_allowlist();
  create event trigger deny_extensions_outside_allowlist_end on ddl_command_end
    when tag in ('CREATE EXTENSION', 'ALTER EXTENSION', 'CREATE LANGUAGE')
    execute function platform.refuse_extension_outside_allowlist();

  -- Step 11's hand-over, for every customer schema and the schemas themselves; otherwise as it was.
  create or replace function platform.hand_over_customer_objects() returns event_trigger
    language plpgsql security definer
    set search_path = pg_catalog, pg_temp
  as $function$
  declare
    ${ROLES}
    owner_oid oid := (select oid from pg_catalog.pg_roles where rolname = owner_role);
    command record;
    object_owner oid;
    kind "char";
  begin
    for command in
      select distinct classid, objid, object_type, object_identity from pg_catalog.pg_event_trigger_ddl_commands()
       where not in_extension
         and (classid = 'pg_catalog.pg_namespace'::pg_catalog.regclass
              or (schema_name not in ${UNTOUCHED_SCHEMAS}
                  and classid in ('pg_catalog.pg_class'::pg_catalog.regclass, 'pg_catalog.pg_proc'::pg_catalog.regclass, 'pg_catalog.pg_type'::pg_catalog.regclass)))
    loop
      if command.classid = 'pg_catalog.pg_namespace'::pg_catalog.regclass then
        object_owner := (select nspowner from pg_catalog.pg_namespace where oid = command.objid and nspname not in ${UNTOUCHED_SCHEMAS});
        continue when object_owner is null
          or not (object_owner = owner_oid or exists (select from pg_catalog.pg_auth_members where member = object_owner and roleid = owner_oid));
        if object_owner <> owner_oid then
          execute pg_catalog.format('alter schema %s owner to %I', command.object_identity, owner_role);
        end if;
        execute pg_catalog.format('grant usage on schema %s to %I', command.object_identity, scoped_role);
        continue;
      end if;
      kind := (select relkind from pg_catalog.pg_class where oid = command.objid and command.classid = 'pg_catalog.pg_class'::pg_catalog.regclass);
      continue when kind is not null and kind not in ('r', 'p', 'v', 'm', 'S');
      object_owner := case command.classid
        when 'pg_catalog.pg_class'::pg_catalog.regclass then (select relowner from pg_catalog.pg_class where oid = command.objid)
        when 'pg_catalog.pg_proc'::pg_catalog.regclass then (select proowner from pg_catalog.pg_proc where oid = command.objid)
        else (select typowner from pg_catalog.pg_type where oid = command.objid) end;
      -- Only what the owner role's members create: the platform's and the tenant role's objects stay theirs.
      continue when object_owner is null
        or not (object_owner = owner_oid or exists (select from pg_catalog.pg_auth_members where member = object_owner and roleid = owner_oid));
      -- A sequence owned by a column follows its table.
      if object_owner <> owner_oid and not (kind = 'S' and exists (
           select from pg_catalog.pg_depend where classid = 'pg_catalog.pg_class'::pg_catalog.regclass and objid = command.objid
              and refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass and deptype in ('a', 'i'))) then
        execute pg_catalog.format('alter %s %s owner to %I', command.object_type, command.object_identity, owner_role);
      end if;
      if (kind in ('r', 'p') and ${hasTenantColumn('command.objid')}) or kind = 'v' then
        execute pg_catalog.format('grant select, insert, update, delete on %s to %I', command.objid::pg_catalog.regclass, scoped_role);
      elsif kind in ('r', 'p', 'm') then
        execute pg_catalog.format('grant select on %s to %I', command.objid::pg_catalog.regclass, scoped_role);
      elsif kind = 'S' then
        execute pg_catalog.format('grant usage, select on sequence %s to %I', command.objid::pg_catalog.regclass, scoped_role);
      end if;
    end loop;
  end
  $function$;

  -- The hand-over now also fires for schemas.
  drop event trigger hand_over_customer_objects;
  create event trigger hand_over_customer_objects on ddl_command_end
    when tag in ('CREATE SCHEMA', 'ALTER SCHEMA',
                 'CREATE TABLE', 'CREATE TABLE AS', 'SELECT INTO', 'CREATE VIEW', 'CREATE MATERIALIZED VIEW',
                 'CREATE SEQUENCE', 'CREATE FUNCTION', 'CREATE PROCEDURE', 'CREATE AGGREGATE', 'CREATE TYPE', 'CREATE DOMAIN',
                 'ALTER TABLE', 'ALTER VIEW', 'ALTER MATERIALIZED VIEW', 'ALTER SEQUENCE', 'ALTER FUNCTION',
                 'ALTER PROCEDURE', 'ALTER AGGREGATE', 'ALTER TYPE', 'ALTER DOMAIN')
    execute function platform.hand_over_customer_objects();
`;
