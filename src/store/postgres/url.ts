import { ConfigError } from '../../errors.js';

/** What a PostgreSQL database URL says, Baton's own parameters taken out of it. */
export interface PostgresUrl {
  /** The URL node-postgres connects to (other parameters, e.g. `application_name`, kept). */
  connectionString: string;
  /** `?schema=` */
  schema?: string;
  /** `?pool_size=`: connections of the pool, 1..1000 */
  poolSize?: number;
  /** `?pgbouncer=true`: the URL is a PgBouncer in transaction pooling mode */
  pgbouncer?: boolean;
}

/** The most connections `?pool_size=` may ask for. */
const MAX_POOL_SIZE = 1000;

/**
 * Reads Baton's parameters out of a `postgres://` or `postgresql://` URL:
 * `schema` (a name), `pool_size` (an integer 1..1000) and `pgbouncer` (`true` or
 * `false`), each at most once.
 * @param redacted - the URL as messages show it (password hidden)
 * @throws ConfigError naming the parameter: malformed URL, empty schema, a value out
 *   of range, a parameter given twice
 */
export function parsePostgresUrl(url: string, redacted: string): PostgresUrl {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConfigError(`database URL ${JSON.stringify(redacted)} is malformed`);
  }
  const bad = (why: string) => new ConfigError(`database URL ${JSON.stringify(redacted)}: ${why}`);
  const take = (name: string): string | undefined => {
    const values = parsed.searchParams.getAll(name);
    if (values.length > 1) throw bad(`?${name}= is given more than once; give it once`);
    parsed.searchParams.delete(name);
    return values[0];
  };
  const schema = take('schema');
  if (schema === '') throw bad('?schema= is empty; name a schema or leave the parameter out (default "baton")');
  const poolSizeText = take('pool_size');
  const poolSize = poolSizeText === undefined ? undefined : Number(poolSizeText);
  if (poolSize !== undefined && !(/^\d+$/.test(poolSizeText!) && poolSize >= 1 && poolSize <= MAX_POOL_SIZE)) {
    throw bad(`?pool_size=${poolSizeText} is not a whole number of connections from 1 to ${MAX_POOL_SIZE}`);
  }
  const pgbouncerText = take('pgbouncer');
  if (pgbouncerText !== undefined && pgbouncerText !== 'true' && pgbouncerText !== 'false') {
    throw bad(`?pgbouncer=${pgbouncerText} must be true or false`);
  }
  return {
    connectionString: parsed.toString(),
    ...(schema !== undefined ? { schema } : {}),
    ...(poolSize !== undefined ? { poolSize } : {}),
    ...(pgbouncerText === 'true' ? { pgbouncer: true } : {}),
  };
}

/**
 * Checks a direct URL (LISTEN and migrations): a PostgreSQL URL carrying none of
 * Baton's parameters, which belong to the database URL.
 * @throws ConfigError naming what is wrong
 */
export function parseDirectUrl(url: string, redacted: string): string {
  if (!/^postgres(ql)?:\/\//.test(url)) throw new ConfigError(`direct database URL ${JSON.stringify(redacted)} is not a postgres:// URL`);
  const { connectionString, ...baton } = parsePostgresUrl(url, redacted);
  const given = Object.keys(baton);
  if (given.length > 0) {
    throw new ConfigError(`direct database URL ${JSON.stringify(redacted)}: schema, pool_size and pgbouncer belong on the database URL, not the direct one`);
  }
  return connectionString;
}

/**
 * A URL as messages show it: `postgres://host:port/database`, without the user,
 * password and parameters (a host socket path is shown as given).
 */
export function urlForMessages(connectionString: string): string {
  try {
    const url = new URL(connectionString);
    return `${url.protocol}//${url.host}${url.pathname}`;
  } catch {
    return 'postgres://…';
  }
}

/** What to do when a URL reaches PgBouncer in transaction mode, as the messages that detect it say it. */
export const PGBOUNCER_SETUP = 'add pgbouncer=true to the database URL and give a direct URL (directDatabase, BATON_DIRECT_DATABASE_URL)';
