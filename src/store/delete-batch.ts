import { ConfigError } from '../errors.js';

/** The largest batch `jobDeleteFinished` / `jobDeleteFinishedBeyond` take (rows per statement). */
export const MAX_DELETE_BATCH = 10_000;

/** The largest `keep` of `jobDeleteFinishedBeyond` (its boundary reads that many index entries). */
export const MAX_KEEP = 1_000_000;

/**
 * Checks the bounds of a delete batch before any SQL runs (SQLite would read
 * `LIMIT -1` as "no limit"): `limit` an integer 1..{@link MAX_DELETE_BATCH}, `keep`
 * (when given) an integer 0..{@link MAX_KEEP}.
 * @throws ConfigError naming the operation and the field
 */
export function checkDeleteBatch(op: string, params: { limit: number; keep?: number }): void {
  const { limit, keep } = params;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_DELETE_BATCH) throw new ConfigError(`${op}: limit must be an integer from 1 to ${MAX_DELETE_BATCH}, got ${String(limit)}`);
  if (keep !== undefined && (!Number.isInteger(keep) || keep < 0 || keep > MAX_KEEP)) throw new ConfigError(`${op}: keep must be an integer from 0 to ${MAX_KEEP}, got ${String(keep)}`);
}
