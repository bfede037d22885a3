import Database from 'better-sqlite3';
import pg from 'pg';
import { postgresUrl } from './db.js';

/**
 * Reads or writes the test database behind Baton's back, on either driver, for
 * what the API does not show (migration records). `sql` uses `?` placeholders;
 * on PostgreSQL they become `$1…` and run in the URL's schema.
 */
export async function rawQuery<T>(database: { url: string; path: string; driver: 'sqlite' | 'postgres' }, sql: string, params: unknown[] = []): Promise<T[]> {
  if (database.driver === 'sqlite') {
    const db = new Database(database.path);
    try {
      const statement = db.prepare(sql);
      return (statement.reader ? statement.all(...params) : (statement.run(...params), [])) as T[];
    } finally {
      db.close();
    }
  }
  const schema = new URL(database.url).searchParams.get('schema') ?? 'baton';
  const client = new pg.Client({ connectionString: postgresUrl });
  await client.connect();
  try {
    await client.query(`SET search_path TO "${schema}"`);
    let n = 0;
    return (await client.query(sql.replace(/\?/g, () => `$${++n}`), params)).rows as T[];
  } finally {
    await client.end();
  }
}
