import type { Job } from './types.js';

/**
 * Orders jobs by their place in line, as every claim does: priority ascending (lower
 * runs first), then runAt, then id (enqueue order). For `Array.prototype.sort`:
 * negative when `a` comes first.
 */
export function byPlaceInLine(a: Pick<Job, 'priority' | 'runAt' | 'id'>, b: Pick<Job, 'priority' | 'runAt' | 'id'>): number {
  return a.priority - b.priority || a.runAt.getTime() - b.runAt.getTime() || a.id - b.id;
}
