import { ConfigError, StoreError } from '../errors.js';
import { SchemaBehindError } from '../store/migrate.js';
import { DatabaseFileGoneError, type Store } from '../store/store.js';
import type { Worker } from '../worker/worker.js';

/** One check of {@link Readiness}. */
export interface ReadinessCheck {
  ok: boolean;
  /**
   * Why it failed (or was not run), in a few words. Never the error's text, a URL or
   * a host: the readiness probe answers without a token.
   */
  reason?: string;
}

/** What `baton.readiness()` (and `GET /readyz`) answers. */
export interface Readiness {
  /** Every check passed. */
  ready: boolean;
  /** The names of the checks that ran and failed, in the order of `checks`; [] when ready. */
  failed: string[];
  checks: {
    /** The database answered within the timeout. */
    database: ReadinessCheck;
    /** The schema holds every migration of this code and none newer that breaks it (not run when the database did not answer). */
    schema: ReadinessCheck;
    /** Present when this Baton created workers: every one of them is `running` (started, claiming, not stopping). */
    worker?: ReadinessCheck;
  };
}

/** How long the readiness probe waits for the database: 2000 ms (a Kubernetes probe's `timeoutSeconds` should be above it). */
export const READY_TIMEOUT_MS = 2000;

/**
 * Checks a readiness timeout.
 * @param timeoutMs - ms, an integer in 1..2147483647
 * @returns timeoutMs
 * @throws ConfigError naming the value otherwise
 */
export function readyTimeout(timeoutMs: number): number {
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > 2_147_483_647) {
    throw new ConfigError(`readiness timeout must be an integer number of ms in 1..2147483647, not ${String(timeoutMs)}`);
  }
  return timeoutMs;
}

const OK: ReadinessCheck = Object.freeze({ ok: true });
/** The schema check when the database did not answer: not counted in `failed` (the database is). */
const NOT_CHECKED: ReadinessCheck = Object.freeze({ ok: false, reason: 'not checked: the database did not answer' });
type StoreChecks = Pick<Readiness['checks'], 'database' | 'schema'>;

/**
 * Makes the readiness check of a Baton: the database answers `store.schemaCheck()`
 * (one read of the migration ledger) within `timeoutMs`, the schema is current, and
 * every worker `workers()` lists is `running` — so a worker turns not ready the
 * moment its stop begins (SIGTERM), while it drains. Concurrent calls share one
 * database read; a read that outlives its timeout is still awaited by the calls that
 * follow it, so a hung database never piles up reads.
 * @returns check(options), `options.timeoutMs` 1..2147483647 @defaultValue {@link READY_TIMEOUT_MS};
 *   a database that fails or does not answer is a failed check, not a rejection
 * @throws ConfigError (check's only rejection) for a timeoutMs that is not an integer in range
 */
export function readinessCheck(deps: { store: Store; workers: () => readonly Pick<Worker, 'status'>[] }): (options?: { timeoutMs?: number }) => Promise<Readiness> {
  let reading: Promise<StoreChecks> | undefined;
  return async (options = {}) => {
    const timeoutMs = readyTimeout(options.timeoutMs ?? READY_TIMEOUT_MS);
    reading ??= readStore(deps.store).finally(() => (reading = undefined));
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<StoreChecks>((resolve) => {
      timer = setTimeout(() => resolve({ database: { ok: false, reason: `no answer within ${timeoutMs} ms` }, schema: NOT_CHECKED }), timeoutMs);
    });
    const stored = await Promise.race([reading, timedOut]);
    clearTimeout(timer);
    const checks: Readiness['checks'] = { ...stored };
    const workers = deps.workers();
    if (workers.length > 0) {
      const others = workers.map((w) => w.status).filter((status) => status !== 'running');
      checks.worker = others.length === 0 ? OK : { ok: false, reason: `worker ${[...new Set(others)].join(', ')}` };
    }
    const failed = Object.entries(checks).filter(([, check]) => !check.ok && check !== NOT_CHECKED).map(([name]) => name);
    return { ready: failed.length === 0, failed, checks };
  };
}

/** One read of the migration ledger, sorted into the database and schema checks. Never rejects. */
async function readStore(store: Store): Promise<StoreChecks> {
  try {
    await store.schemaCheck();
    return { database: OK, schema: OK };
  } catch (error) {
    if (error instanceof ConfigError) return { database: OK, schema: { ok: false, reason: 'the schema is newer than this code: upgrade baton-jobs' } };
    if (error instanceof DatabaseFileGoneError || (error instanceof StoreError && error.cause instanceof DatabaseFileGoneError)) {
      return { database: { ok: false, reason: 'the database file was deleted or replaced after this process opened it: restart the process' }, schema: NOT_CHECKED };
    }
    if (error instanceof StoreError && error.cause instanceof SchemaBehindError) {
      return { database: OK, schema: { ok: false, reason: 'the schema lacks a migration of this code: run baton migrate' } };
    }
    return { database: { ok: false, reason: 'the database did not answer' }, schema: NOT_CHECKED };
  }
}
