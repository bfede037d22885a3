import type { Migration } from '../../migrate.js';
import { migration as m0024 } from './0024-baseline.js';

/**
 * Every SQLite migration, in version order: the baseline (version 24, the schema of the
 * first release), then whatever is appended after it, with PostgreSQL's version numbers.
 */
export const migrations: Migration[] = [m0024];
