import type { Migration } from '../../migration.js';
import { migration as m0001 } from './0001-jobs.js';

/** Every SQLite migration, in version order. */
export const migrations: Migration[] = [m0001];
