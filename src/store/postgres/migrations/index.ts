import type { Migration } from '../../migrate.js';
import { migration as m0001 } from './0001-jobs.js';
import { migration as m0002 } from './0002-schedules-leases.js';
import { migration as m0003 } from './0003-workers.js';
import { migration as m0004 } from './0004-queues.js';
import { migration as m0006 } from './0006-finished-indexes.js';
import { migration as m0007 } from './0007-jobs-autovacuum.js';
import { migration as m0009 } from './0009-cancel-requests.js';
import { migration as m0010 } from './0010-finished-jobs.js';
import { migration as m0011 } from './0011-queue-concurrency.js';
import { migration as m0012 } from './0012-concurrency-keys.js';
import { migration as m0013 } from './0013-rate-limits.js';
import { migration as m0014 } from './0014-schedule-overlap.js';
import { migration as m0015 } from './0015-key-counts.js';
import { migration as m0016 } from './0016-key-running-counted.js';
import { migration as m0017 } from './0017-trace-context.js';
import { migration as m0018 } from './0018-job-timeline.js';
import { migration as m0019 } from './0019-keyed-claim-without-join.js';
import { migration as m0020 } from './0020-declared-queues.js';
import { migration as m0021 } from './0021-worker-tasks.js';
import { migration as m0022 } from './0022-job-steps.js';
import { migration as m0023 } from './0023-finished-notify.js';
import { migration as m0024 } from './0024-job-children.js';

/**
 * Every PostgreSQL migration, in version order: SQLite's versions, plus 7 (the jobs
 * table's autovacuum settings), which SQLite has no use for, and without SQLite's 8 (its
 * claim index made queue-first, as PostgreSQL's has been since 1), plus 10 (finished jobs in a
 * table of their own: SQLite has no dead rows for history to slow), plus 15 (concurrency-key
 * counts kept per statement, where SQLite's per-row triggers cost little), plus 16 (a key's running jobs counted where a limit is
 * checked, not kept in its row), plus 19 (the keyed claim without a join back to the keys), plus 23 (a NOTIFY
 * when jobs finish, while a process awaits a result: SQLite's WAL watch sees every commit). Version 5 was never shipped.
 */
export const migrations: Migration[] = [m0001, m0002, m0003, m0004, m0006, m0007, m0009, m0010, m0011, m0012, m0013, m0014, m0015, m0016, m0017, m0018, m0019, m0020, m0021, m0022, m0023, m0024];
