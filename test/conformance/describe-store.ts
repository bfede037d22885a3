import { describe } from 'vitest';
import { flowTests } from './flow.js';
import { followUpTests } from './follow-ups.js';
import { keyTests } from './keys.js';
import { rateTests } from './rates.js';
import { queueDeclarationTests } from './queue-declarations.js';
import { harness, type StoreFactory } from './harness.js';
import { jobAdminTests } from './job-admin.js';
import { jobTests } from './jobs.js';
import { leaseTests } from './leases.js';
import { messageTests } from './messages.js';
import { childTests } from './children.js';
import { retentionTests } from './retention.js';
import { queueOpsTests } from './queue-ops.js';
import { scheduleServiceTests } from './schedules-services.js';
import { stepTests } from './steps.js';
import { tableHealthTests } from './table-health.js';
import { timelineTests } from './timeline.js';
import { workerTests } from './workers.js';

export type { StoreFactory } from './harness.js';

/**
 * The store conformance suite (River's riverdrivertest, Oban's per-engine test
 * modules): every method of the `Store` interface, called directly on the raw
 * driver, with an injected `now` and no sleeps. Every driver passes the same
 * tests; a new store method lands with its tests here.
 *
 * Parts, by concern: jobs.ts (insert, claim), job-admin.ts (cancel, retry, reads,
 * queue figures), leases.ts (fenced writes, heartbeat, rescue, release, named
 * leases), follow-ups.ts (follow-up jobs written with a completion), schedules-services.ts, retention.ts (deleting finished jobs), workers.ts (migrate, schemaCheck, worker registry, clock, the event loop between calls,
 * change notifications, close), queue-ops.ts (paused queues, delete, bulk retry, cancel, purge),
 * table-health.ts (dead rows, vacuum), flow.ts (queue concurrency limits), keys.ts (concurrency keys), rates.ts (rate limits),
 * queue-declarations.ts (settings declared in code and their overrides),
 * timeline.ts (the stored timeline each transition appends to), steps.ts (a job's step log and
 * the suspending release of a sleep, issue 32), messages.ts (a job's mailbox, and the receive
 * that suspends its run until a message wakes it).
 */
export function describeStore(name: string, factory: StoreFactory): void {
  describe(`Store conformance: ${name}`, () => {
    const h = harness(name, factory);
    jobTests(h);
    jobAdminTests(h);
    leaseTests(h);
    followUpTests(h);
    scheduleServiceTests(h);
    workerTests(h);
    retentionTests(h);
    queueOpsTests(h);
    tableHealthTests(h);
    flowTests(h);
    keyTests(h);
    rateTests(h);
    queueDeclarationTests(h);
    timelineTests(h);
    stepTests(h);
    messageTests(h);
    childTests(h);
  });
}
