import type { Migration } from '../../migrate.js';
import { migration as m0024 } from './0024-baseline.js';
import { migration as m0025 } from './0025-finished-jobs.js';

/**
 * Every SQLite migration, in version order: the baseline (version 24, the schema of the
 * first release), then whatever is appended after it, with PostgreSQL's version numbers
 * (25, finished jobs in a table of their own, has no PostgreSQL twin: its baseline has them).
 */
export const migrations: Migration[] = [m0024, m0025];
