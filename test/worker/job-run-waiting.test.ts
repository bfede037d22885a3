/**
 * A run claimed ahead (`prefetch`) that is aborted while it waits: the abort ends its
 * wait a microtask later, so a slot freeing in between calls start() on a run whose end
 * is already on the way. start() refuses it: it must not count as started (and take a
 * slot it will never use); it ends as the abort says, without running its handler.
 */
import { describe, expect, it } from 'vitest';
import { defineTask } from 'baton-jobs';
import { systemClock } from '../../src/clock.js';
import { CancelledError } from '../../src/errors.js';
import { TypedEmitter } from '../../src/observe/events.js';
import { loadTracing } from '../../src/observe/tracing.js';
import { openStore } from '../../src/store/open.js';
import { Completer } from '../../src/worker/completer.js';
import { Suspender } from '../../src/worker/suspender.js';
import type { WorkerEvents } from '../../src/worker/events.js';
import { JobRun } from '../../src/worker/executor.js';
import { openBaton, tempDatabase, testLogger } from '../helpers/db.js';

describe('a waiting run aborted before a slot frees for it', () => {
  it('is not started by start(): false, not started, and it ends cancelled without running its handler', async () => {
    const { url } = tempDatabase();
    let ran = false;
    const task = defineTask('waits', { handler: async () => void (ran = true) });
    const baton = await openBaton({ database: url });
    const [job] = await baton.enqueueMany([{ task, payload: null }]);
    const store = await openStore(url);
    try {
      const [claimed] = await store.jobClaim({ workerId: 'w', tasks: ['waits'], queues: ['default'], limit: 1, leaseMs: 60_000, now: Date.now() });
      await baton.cancel(job!.id, 'not needed'); // requested: the run ends it
      const events = new TypedEmitter<WorkerEvents>();
      const started: number[] = [];
      events.on('job:started', (e) => started.push(e.job.id));
      const logger = testLogger();
      const run = new JobRun(claimed!, task, {
        store, completer: new Completer(store, systemClock, logger), suspender: new Suspender(store, systemClock), clock: systemClock, logger, events, workerId: 'w', tracing: await loadTracing(), client: { api: baton, prepare: () => Promise.reject(new Error('no follow-ups here')), enqueued: () => undefined },
        payloadLimit: 1_000_000, progressInterval: 1_000, abortGrace: 1_000, cancelGrace: 1_000, stopDeadline: () => Number.POSITIVE_INFINITY,
      }, true);
      run.abort(new CancelledError('not needed'));
      expect(run.start()).toBe(false);
      expect(run.started).toBe(false);
      await run.done;
      expect(ran).toBe(false);
      expect(started).toEqual([]);
      expect(await baton.getJob(job!.id)).toMatchObject({ state: 'cancelled', cancelReason: 'not needed' });
    } finally {
      await store.close();
    }
  });
});
