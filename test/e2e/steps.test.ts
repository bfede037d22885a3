/**
 * Durable steps and waits across real worker processes (issue 32, "Tests it must
 * have"), on both drivers. The kit's `stepped` task runs five steps (one…five); each
 * step's function writes a row to the external ledger (job, step, attempt, pid, lease
 * token; started, returned, saved, signal aborted with its reason) and is held while a
 * gate file `<dir>/<step>.hold` exists, so the test decides when a process is inside
 * step N. Executions are counted from the ledger, not from Baton's bookkeeping.
 *
 * Every wait is on what a process reported (its events, ledger rows); no fixed sleeps,
 * no wall-clock bounds beyond a loose guard. Worker processes are SIGKILLed after each
 * test if still running (helpers/child.ts), stopped ones included.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { STEPPED } from '../fixtures/kit.js';
import { spawnWorker, type ChildHandle, type ChildMessage } from '../helpers/child.js';
import { testDriver } from '../helpers/db.js';
import { until } from '../helpers/events.js';
import { openKitBaton } from '../helpers/kit-baton.js';
import type { Ledger, StepRow } from '../helpers/ledger.js';

/** Holds step `step` of `stepped` jobs (in any process) until {@link release}. */
const hold = (dir: string, step: string) => writeFileSync(join(dir, `${step}.hold`), '');
const release = (dir: string, step: string) => rmSync(join(dir, `${step}.hold`), { force: true });

/** Resolves with the ledger row of `step` of job `jobId` run by process `pid`, once `ready(row)` holds. */
function stepRow(ledger: Ledger, jobId: number, step: string, pid: number, ready: (row: StepRow) => boolean = () => true, what = `${step} started in ${pid}`) {
  return until(() => ledger.stepRows(jobId).find((r) => r.step === step && r.pid === pid && ready(r)), what, 90_000);
}

/** Per step, who ran its function: `pid:saved`, `pid:aborted(<reason>)` or `pid:running` (never returned). */
function executions(ledger: Ledger, jobId: number, names: Record<number, string>): Record<string, string[]> {
  const out: Record<string, string[]> = Object.fromEntries(STEPPED.map((s) => [s, []]));
  for (const r of ledger.stepRows(jobId)) {
    const who = names[r.pid] ?? String(r.pid);
    out[r.step]!.push(r.savedAt !== null ? `${who}:saved` : r.abortedAt !== null ? `${who}:aborted(${r.abortReason})` : r.finishedAt !== null ? `${who}:returned` : `${who}:running`);
  }
  return out;
}

/** The `job:step` events a worker process reported for one job, as `step:outcome`. */
const stepEvents = (w: ChildHandle, jobId: number) =>
  w.messages.filter((m) => m.type === 'event' && m.name === 'job:step' && m.jobId === jobId).map((m) => `${m.step}:${m.outcome}`);

const eventsOf = (w: ChildHandle, jobId: number, name: string): ChildMessage[] => w.messages.filter((m) => m.type === 'event' && m.name === name && m.jobId === jobId);

/** Worker loops fast enough that a hand-off or a rescue is seen promptly. */
const FAST = { pollInterval: 200, rescueInterval: 200 };

describe(`durable steps across worker processes (${testDriver})`, () => {
  it('SIGTERM during step 3: the step aborts with ShutdownError, the job is handed back with its step log, and another process resumes it: 1–2 not run again, 3 run again, 4–5 once', async () => {
    const { db, baton, kit, ledger, ledgerPath } = await openKitBaton();
    const gate = db.dir;
    hold(gate, 'three');
    const a = await spawnWorker({ database: db.url, ledger: ledgerPath, worker: { concurrency: 1, drainTimeout: 300, abortGrace: 5000, ...FAST } });
    const job = await baton.enqueue(kit.stepped, { gate });
    await stepRow(ledger, job.id, 'three', a.pid);
    // B starts after A holds the job, so A is the one that ran steps 1–3.
    const b = await spawnWorker({ database: db.url, ledger: ledgerPath, worker: { concurrency: 1, ...FAST } });

    a.kill('SIGTERM');
    expect(await a.exited).toEqual({ code: 0, signal: null });
    expect(eventsOf(a, job.id, 'job:aborted').map((m) => m.reason)).toEqual(['shutdown']);
    expect(eventsOf(a, job.id, 'job:released')).toHaveLength(1);
    // The step's own signal fired with the shutdown reason, and A's step 3 was not saved.
    const aborted = (await stepRow(ledger, job.id, 'three', a.pid))!;
    expect(aborted).toMatchObject({ abortReason: 'shutdown', savedAt: null, finishedAt: null });

    release(gate, 'three');
    const completed = await b.waitForEvent('job:completed', job.id);
    expect(completed.result).toEqual({ steps: [`one@${a.pid}`, `two@${a.pid}`, `three@${b.pid}`, `four@${b.pid}`, `five@${b.pid}`], pid: b.pid });

    expect(executions(ledger, job.id, { [a.pid]: 'A', [b.pid]: 'B' })).toEqual({
      one: ['A:saved'],
      two: ['A:saved'],
      three: ['A:aborted(shutdown)', 'B:saved'],
      four: ['B:saved'],
      five: ['B:saved'],
    });
    expect(stepEvents(b, job.id)).toEqual(['one:replayed', 'two:replayed', 'three:run', 'four:run', 'five:run']);
    const done = await baton.getJob(job.id);
    expect(done.state).toBe('completed');
    expect(done.attempt).toBe(1); // a shutdown hand-off does not count an attempt
    const stored = await baton.store.jobStepList({ id: job.id });
    expect(stored.map((s) => [s.name, s.state, s.attempt])).toEqual(STEPPED.map((s) => [s, 'completed', 1]));
    expect(stored.map((s) => s.result)).toEqual((completed.result as { steps: string[] }).steps.map((v) => JSON.stringify(v)));
  });

  it('SIGKILL during step 4: after the lease expires another process rescues the job: 1–3 not run again, 4 run again, 5 once', async () => {
    const { db, baton, kit, ledger, ledgerPath } = await openKitBaton();
    const gate = db.dir;
    hold(gate, 'four');
    // A 3 s lease survives a busy machine's stalls while A lives (as timeline.test.ts).
    const options = { concurrency: 1, leaseTtl: 3000, heartbeatInterval: 300, ...FAST };
    const a = await spawnWorker({ database: db.url, ledger: ledgerPath, worker: options });
    const job = await baton.enqueue(kit.stepped, { gate });
    await stepRow(ledger, job.id, 'four', a.pid);
    const b = await spawnWorker({ database: db.url, ledger: ledgerPath, worker: options });

    // Heartbeats only push the lease's end later: the one read now is a lower bound.
    const leaseEnd = (await baton.getJob(job.id)).leaseExpiresAt!.getTime();
    a.kill('SIGKILL');
    expect(await a.exited).toEqual({ code: null, signal: 'SIGKILL' });
    release(gate, 'four');
    const claimed = await b.waitForEvent('job:claimed', job.id);
    // Not before the lease ended (the store's clock and B's agree within a few ms).
    expect(claimed.at as number).toBeGreaterThanOrEqual(leaseEnd - 10);
    expect(claimed.attempt).toBe(2); // a crash counts the attempt
    const completed = await b.waitForEvent('job:completed', job.id);
    expect(completed.result).toEqual({ steps: [`one@${a.pid}`, `two@${a.pid}`, `three@${a.pid}`, `four@${b.pid}`, `five@${b.pid}`], pid: b.pid });

    expect(executions(ledger, job.id, { [a.pid]: 'A', [b.pid]: 'B' })).toEqual({
      one: ['A:saved'],
      two: ['A:saved'],
      three: ['A:saved'],
      four: ['A:running', 'B:saved'],
      five: ['B:saved'],
    });
    expect(stepEvents(b, job.id)).toEqual(['one:replayed', 'two:replayed', 'three:replayed', 'four:run', 'five:run']);
    const stored = await baton.store.jobStepList({ id: job.id });
    expect(stored.map((s) => [s.name, s.attempt])).toEqual([['one', 1], ['two', 1], ['three', 1], ['four', 2], ['five', 2]]);
    const done = await baton.getJob(job.id);
    expect(done.state).toBe('completed');
    expect(done.attempt).toBe(2);
  });

  it('a cancel from another process during step 2: the step\'s signal aborts with CancelledError, the job ends cancelled, steps 3–5 never run', async () => {
    const { db, baton, kit, ledger, ledgerPath } = await openKitBaton();
    const gate = db.dir;
    hold(gate, 'two');
    // The cancel poll is an hour away: the cancel reaches the worker by its push path
    // (LISTEN/NOTIFY on PostgreSQL, the data_version watch on SQLite).
    const a = await spawnWorker({ database: db.url, ledger: ledgerPath, worker: { concurrency: 1, cancelPollInterval: 3_600_000 } });
    const job = await baton.enqueue(kit.stepped, { gate });
    await stepRow(ledger, job.id, 'two', a.pid);

    const sentAt = Date.now();
    const answer = await baton.cancel(job.id, 'not needed');
    expect(answer.outcome).toBe('requested');
    const requestedAt = answer.job.cancelRequestedAt!.getTime();
    const row = (await stepRow(ledger, job.id, 'two', a.pid, (r) => r.abortedAt !== null, "step two's signal aborted"))!;
    await a.waitForEvent('job:cancelled', job.id);
    expect(row).toMatchObject({ abortReason: 'cancelled', savedAt: null, finishedAt: null });
    // Causality, then a loose guard only: a loaded 2-core machine stalls for seconds.
    expect(row.abortedAt!).toBeGreaterThanOrEqual(sentAt);
    const latency = row.abortedAt! - requestedAt;
    expect(latency).toBeLessThan(5000);
    console.info(`[steps e2e ${testDriver}] cancel → step signal: ${latency} ms after the stored request, ${row.abortedAt! - sentAt} ms after baton.cancel() was called`);

    // Opening the gate now runs nothing more: the job is over.
    release(gate, 'two');
    const done = await baton.getJob(job.id);
    expect(done.state).toBe('cancelled');
    expect(done.cancelReason).toBe('not needed');
    expect(executions(ledger, job.id, { [a.pid]: 'A' })).toEqual({ one: ['A:saved'], two: ['A:aborted(cancelled)'], three: [], four: [], five: [] });
    expect((await baton.store.jobStepList({ id: job.id })).map((s) => [s.name, s.state])).toEqual([['one', 'completed']]);
    // The worker is still well and stops cleanly; nothing else ran for the job.
    a.kill('SIGTERM');
    expect(await a.exited).toEqual({ code: 0, signal: null });
    expect(ledger.stepRows(job.id).map((r) => r.step)).toEqual(['one', 'two']);
  });

  it('a stale holder (SIGSTOP past its lease, SIGCONT after another process took the job over) cannot save its step, and its step\'s signal aborts with LeaseLostError', async () => {
    const { db, baton, kit, ledger, ledgerPath } = await openKitBaton();
    const gate = db.dir;
    hold(gate, 'three');
    hold(gate, 'four');
    // A's own background loops are slow, so a SIGSTOP almost never lands inside one of
    // its write transactions (which would hold the database's lock while A is frozen).
    const a = await spawnWorker({
      database: db.url,
      ledger: ledgerPath,
      worker: { concurrency: 1, leaseTtl: 3000, heartbeatInterval: 1000, rescueInterval: 3_600_000, cancelPollInterval: 3_600_000, pollInterval: 3_600_000 },
    });
    const job = await baton.enqueue(kit.stepped, { gate });
    await stepRow(ledger, job.id, 'three', a.pid);
    const b = await spawnWorker({ database: db.url, ledger: ledgerPath, worker: { concurrency: 1, leaseTtl: 3000, heartbeatInterval: 300, ...FAST } });

    a.kill('SIGSTOP');
    // Frozen, A cannot see its gate open; B, after the lease, runs step 3 and holds in step 4.
    release(gate, 'three');
    const claimed = await b.waitForEvent('job:claimed', job.id);
    expect(claimed.attempt).toBe(2);
    await stepRow(ledger, job.id, 'four', b.pid);
    expect((await baton.store.jobStepList({ id: job.id })).find((s) => s.name === 'three')).toMatchObject({ state: 'completed', attempt: 2, result: JSON.stringify(`three@${b.pid}`) });

    a.kill('SIGCONT');
    // A's step 3 returns (its gate is open) while B holds the job: the save is refused
    // and A's step signal aborts with a LeaseLostError.
    const stale = (await stepRow(ledger, job.id, 'three', a.pid, (r) => r.abortedAt !== null, "A's step three signal aborted"))!;
    expect(stale).toMatchObject({ abortReason: 'lease_lost', savedAt: null, attempt: 1 });
    await a.waitFor((m) => m.type === 'event' && m.name === 'job:aborted' && m.jobId === job.id, "A's job:aborted");
    expect(eventsOf(a, job.id, 'job:aborted').map((m) => m.reason)).toEqual(['lease_lost']);
    const how = eventsOf(a, job.id, 'write:dropped').map((m) => m.op);
    console.info(
      `[steps e2e ${testDriver}] stale holder: A's step three ${stale.finishedAt === null ? 'did not return' : 'returned'}; signal aborted: "${stale.abortMessage}"; A's write:dropped ops: ${JSON.stringify(how)}; lease:lost events: ${eventsOf(a, job.id, 'lease:lost').length}`,
    );
    // B's step 3 is still the stored one.
    expect((await baton.store.jobStepList({ id: job.id })).find((s) => s.name === 'three')).toMatchObject({ attempt: 2, result: JSON.stringify(`three@${b.pid}`) });

    release(gate, 'four');
    const completed = await b.waitForEvent('job:completed', job.id);
    expect(completed.result).toEqual({ steps: [`one@${a.pid}`, `two@${a.pid}`, `three@${b.pid}`, `four@${b.pid}`, `five@${b.pid}`], pid: b.pid });
    expect(executions(ledger, job.id, { [a.pid]: 'A', [b.pid]: 'B' })).toEqual({
      one: ['A:saved'],
      two: ['A:saved'],
      three: ['A:aborted(lease_lost)', 'B:saved'],
      four: ['B:saved'],
      five: ['B:saved'],
    });
    const done = await baton.getJob(job.id);
    expect(done).toMatchObject({ state: 'completed', attempt: 2, result: completed.result });
    expect((await baton.store.jobStepList({ id: job.id })).map((s) => [s.name, s.attempt])).toEqual([['one', 1], ['two', 1], ['three', 2], ['four', 2], ['five', 2]]);
    expect(eventsOf(a, job.id, 'job:completed')).toEqual([]);
    // The stale worker carries on and stops cleanly.
    a.kill('SIGTERM');
    expect(await a.exited).toEqual({ code: 0, signal: null });
  });

  it('a 2 s durable sleep frees the slot of a concurrency-1 worker process for another job, and the job resumes on another process after the first was stopped', async () => {
    const { db, baton, kit, ledger, ledgerPath } = await openKitBaton();
    const gate = db.dir;
    const a = await spawnWorker({ database: db.url, ledger: ledgerPath, worker: { concurrency: 1, ...FAST } });
    const sleeper = await baton.enqueue(kit.stepped, { gate, sleepAfter: 'two', sleepMs: 2000 });
    // Due at once, behind the sleeper: A's one slot takes it only once the sleep frees it
    // (and before the sleeper, whose runAt is the sleep's end). It then holds the slot, so
    // A cannot resume the sleeper.
    const other = await baton.enqueue(kit.gated, { path: join(gate, 'other.open') });

    const waiting = await a.waitForEvent('job:waiting', sleeper.id);
    expect(waiting.wait).toMatchObject({ kind: 'sleep' });
    await until(() => ledger.rows(other.id).length === 1, 'the other job started in the freed slot', 90_000);
    const [otherRow] = ledger.rows(other.id);
    expect(otherRow!.pid).toBe(a.pid);
    expect(otherRow!.startedAt).toBeGreaterThanOrEqual(waiting.at as number);
    const during = await baton.getJob(sleeper.id);
    expect(during).toMatchObject({ state: 'queued', attempt: 0, wait: { kind: 'sleep' } }); // the suspension counted no attempt

    // Stop A: it claims nothing new while it drains the other job, then exits.
    a.kill('SIGTERM');
    await a.waitForEvent('worker:stopping');
    writeFileSync(join(gate, 'other.open'), '');
    expect(await a.exited).toEqual({ code: 0, signal: null });
    expect(eventsOf(a, other.id, 'job:completed')).toHaveLength(1);
    expect(eventsOf(a, sleeper.id, 'job:claimed')).toHaveLength(1);

    const b = await spawnWorker({ database: db.url, ledger: ledgerPath, worker: { concurrency: 1, ...FAST } });
    const completed = await b.waitForEvent('job:completed', sleeper.id);
    expect(completed.result).toEqual({ steps: [`one@${a.pid}`, `two@${a.pid}`, `three@${b.pid}`, `four@${b.pid}`, `five@${b.pid}`], pid: b.pid });
    expect(stepEvents(b, sleeper.id)).toEqual(['one:replayed', 'two:replayed', 'baton:sleep:replayed', 'three:run', 'four:run', 'five:run']); // the sleep is a step of its own
    const rows = ledger.stepRows(sleeper.id);
    const two = rows.find((r) => r.step === 'two')!;
    const three = rows.find((r) => r.step === 'three')!;
    expect(rows.map((r) => [r.step, r.pid])).toEqual([['one', a.pid], ['two', a.pid], ['three', b.pid], ['four', b.pid], ['five', b.pid]]);
    // The sleep began after step 2 was saved and ends 2 s after it began (the store's clock may round by a few ms).
    expect(three.startedAt - two.savedAt!).toBeGreaterThanOrEqual(1990);
    expect(three.startedAt).toBeGreaterThanOrEqual((waiting.wait as { until: number }).until - 10);
    const done = await baton.getJob(sleeper.id);
    expect(done).toMatchObject({ state: 'completed', attempt: 1, wait: null });
  });
});
