import type { Migration } from '../../migrate.js';
import { migration as m0001 } from './0001-jobs.js';
import { migration as m0002 } from './0002-schedules-leases.js';
import { migration as m0003 } from './0003-workers.js';
import { migration as m0004 } from './0004-queues.js';
import { migration as m0006 } from './0006-finished-indexes.js';

/** Every PostgreSQL migration, in version order (the same versions as SQLite's). */
export const migrations: Migration[] = [m0001, m0002, m0003, m0004, m0006];
