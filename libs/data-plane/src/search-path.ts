/**
 * Libpq options for every platform connection to a customer's database. Customers may create
 * functions and operators in `public`; the platform connects as a superuser or a service role,
 * and an untyped parameter can make a customer's overload the better match for a built-in name,
 * which would run it with the platform's rights. pg_catalog alone (pg_temp last, as PostgreSQL advises) means no
 * customer object answers to an unqualified name, so the platform's SQL names tables with schemas.
 */
export const PINNED_SEARCH_PATH_OPTIONS = '-c search_path=pg_catalog,pg_temp';
