import type { Migration } from '../../migration.js';
import { migration as m0001 } from './0001-jobs.js';

/** Every PostgreSQL migration, in version order (the same versions as SQLite's). */
export const migrations: Migration[] = [m0001];
