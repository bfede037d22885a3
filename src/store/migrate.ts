import { ConfigError } from '../errors.js';

/**
 * A schema migration. Files live in `src/store/<driver>/migrations/NNNN-name.ts`,
 * with the same version numbers on every driver: each driver's first is its baseline
 * (version 24, the schema of the first release), and the ones after it are appended,
 * never edited once released (docs/development.md, "Migrations"). A `breaking`
 * migration means older code must not run against the new schema; a store refuses
 * to open a database whose schema holds a breaking version newer than the code knows.
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
  breaking?: boolean;
}

/** A row of the `baton_migrations` ledger. */
export interface AppliedMigration {
  version: number;
  name: string;
  breaking: boolean;
}

/**
 * What a driver supplies to {@link runMigrations}: how to run SQL inside the one
 * transaction (and lock) the migration runs in. Nothing else is driver-specific.
 */
export interface MigrationTransaction {
  /** Creates the ledger when missing and returns its rows. */
  applied(): Promise<AppliedMigration[]>;
  /** Runs one migration's SQL (several statements). */
  exec(sql: string): Promise<void>;
  /** Appends the ledger row of a migration just applied. */
  record(migration: Migration): Promise<void>;
}

/**
 * A schema that lacks a migration this code has (it is behind the code): what
 * {@link checkSchema} throws, wrapped in a StoreError by the instrumented store,
 * so that callers (the readiness probe) tell it from a database that does not answer.
 * Its name stays "Error": messages read as before.
 */
export class SchemaBehindError extends Error {}

/** Refuses a schema holding a breaking version newer than `migrations` knows. */
function refuseNewer(migrations: readonly Migration[], where: string, applied: readonly AppliedMigration[]): void {
  const known = Math.max(0, ...migrations.map((m) => m.version));
  const newer = applied.filter((m) => m.version > known && m.breaking).sort((a, b) => a.version - b.version);
  if (newer.length > 0) {
    const latest = newer.at(-1)!;
    throw new ConfigError(`database ${where} is at version ${latest.version} (${latest.name}), newer than this Baton knows (${known}); upgrade baton-jobs`);
  }
}

/**
 * Refuses a schema that holds part of the pre-release chain the baseline replaced:
 * versions older than the code's first (the baseline) recorded, the baseline not. The
 * baseline creates every table, so it cannot run over them; a database the chain took
 * to its end holds the baseline's version and is not refused.
 */
function refuseFolded(migrations: readonly Migration[], where: string, applied: readonly AppliedMigration[]): void {
  if (migrations.length === 0) return;
  const baseline = Math.min(...migrations.map((m) => m.version));
  const older = applied.filter((m) => m.version < baseline).sort((a, b) => a.version - b.version);
  if (older.length === 0 || applied.some((m) => m.version === baseline)) return;
  const last = older.at(-1)!;
  throw new ConfigError(`database ${where} holds a pre-release Baton schema (versions up to ${last.version}, ${last.name}), older than the baseline (version ${baseline}) this Baton starts from: it cannot be migrated; recreate the database (or the schema)`);
}

/**
 * What a read-only opener checks instead of migrating (both drivers share it): the
 * schema holds every migration of `migrations`, and no breaking version newer than
 * them.
 * @param applied - the ledger's rows; [] when the ledger does not exist
 * @param where - names the database in the refusal, e.g. `schema "baton"`
 * @throws ConfigError when the schema is newer (breaking) than this code
 * @throws SchemaBehindError (StoreError through the instrumented store) naming the missing versions
 */
export function checkSchema(migrations: readonly Migration[], where: string, applied: readonly AppliedMigration[]): void {
  refuseNewer(migrations, where, applied);
  const done = new Set(applied.map((m) => m.version));
  const missing = migrations.filter((m) => !done.has(m.version)).sort((a, b) => a.version - b.version);
  if (missing.length === 0) return;
  const state = applied.length === 0 ? 'has no Baton schema' : `lacks migration ${missing.map((m) => `${m.version} (${m.name})`).join(', ')}`;
  throw new SchemaBehindError(`database ${where} ${state}; a read-only opener does not migrate: run \`baton migrate\` (or start a worker) with write access first`);
}

/**
 * The ledger logic both drivers share: inside `transaction` (which the driver runs
 * as one transaction holding its migration lock, so that concurrent openers apply
 * each version once), reads which versions are applied, refuses a schema holding a
 * breaking version newer than `migrations` knows, then applies the missing ones in
 * version order, each followed by its ledger row. A newer non-breaking version is
 * tolerated (older code may run against an additive change).
 *
 * @param where - names the database in the refusal, e.g. `schema "baton"`
 * @throws ConfigError when the schema is newer (breaking) than this code, holds part of the pre-release chain
 *   the baseline replaced, or when two migrations share a version
 */
export async function runMigrations(
  migrations: readonly Migration[],
  where: string,
  transaction: <T>(fn: (tx: MigrationTransaction) => Promise<T>) => Promise<T>,
): Promise<void> {
  const ordered = [...migrations].sort((a, b) => a.version - b.version);
  for (const [i, m] of ordered.entries()) {
    if (i > 0 && ordered[i - 1]!.version === m.version) throw new ConfigError(`two migrations have version ${m.version}`);
  }
  await transaction(async (tx) => {
    const applied = await tx.applied();
    refuseNewer(ordered, where, applied);
    refuseFolded(ordered, where, applied);
    const done = new Set(applied.map((m) => m.version));
    for (const migration of ordered) {
      if (done.has(migration.version)) continue;
      await tx.exec(migration.sql);
      await tx.record(migration);
    }
  });
}
