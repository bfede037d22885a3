import type { Migration } from '../../migrate.js';
import { migration as m0001 } from './0001-jobs.js';
import { migration as m0002 } from './0002-schedules-leases.js';
import { migration as m0003 } from './0003-workers.js';
import { migration as m0004 } from './0004-queues.js';
import { migration as m0006 } from './0006-finished-indexes.js';
import { migration as m0008 } from './0008-claim-by-queue.js';
import { migration as m0009 } from './0009-cancel-requests.js';
import { migration as m0011 } from './0011-queue-concurrency.js';
import { migration as m0012 } from './0012-concurrency-keys.js';
import { migration as m0013 } from './0013-rate-limits.js';
import { migration as m0014 } from './0014-schedule-overlap.js';
import { migration as m0017 } from './0017-trace-context.js';
import { migration as m0018 } from './0018-job-timeline.js';
import { migration as m0020 } from './0020-declared-queues.js';
import { migration as m0021 } from './0021-worker-tasks.js';
import { migration as m0022 } from './0022-job-steps.js';
import { migration as m0024 } from './0024-job-children.js';

/**
 * Every SQLite migration, in version order. Versions 7, 10, 15, 16, 19 and 23 are PostgreSQL's alone (the jobs
 * table's autovacuum settings; finished jobs in a table of their own; concurrency-key counts; the keyed claim; a NOTIFY when
 * jobs finish, which SQLite's WAL watch makes needless); version 5 was never shipped.
 */
export const migrations: Migration[] = [m0001, m0002, m0003, m0004, m0006, m0008, m0009, m0011, m0012, m0013, m0014, m0017, m0018, m0020, m0021, m0022, m0024];
