/**
 * The soak checker on synthetic histories: one clean history of everything the soak does
 * (faults included) passes and is counted right; then, for each invariant of issue 34, a
 * history broken in that one way is caught, naming the invariant and the job. This is
 * where the checker shows it can fail.
 */
import { describe, expect, it } from 'vitest';
import { checkSoak, formatReport } from './check-soak.js';
import type { InvariantName, SoakCheckInput } from './check-types.js';
import { cleanHistory } from './synthetic-history.js';
import { withRef } from './write-ref.js';

/** The violations of a history as `invariant job` strings, e.g. `rerun 1`. */
function caught(h: ReturnType<typeof cleanHistory>, options: Partial<SoakCheckInput> = {}): string[] {
  return checkSoak({ ...h.input(), ...options }).violations.map((v) => `${v.invariant}${v.jobId === undefined ? '' : ` ${v.jobId}`}`);
}

const only = (invariant: InvariantName, jobId?: number) => [`${invariant}${jobId === undefined ? '' : ` ${jobId}`}`];

describe('the soak checker', () => {
  it('passes a clean history with every kind of work and fault, and counts it', () => {
    const report = checkSoak(cleanHistory().input());
    expect(report.violations).toEqual([]);
    expect(report.faults).toEqual({ sigkill: 1, sigterm: 1, sigstop: 1, 'net-cut': 0, 'db-restart': 1, 'cpu-hog': 1 });
    expect(report.reRuns).toEqual({ explained: { sigkill: 1, sigterm: 1, sigstop: 1, 'net-cut': 0, 'db-restart': 0, 'cpu-hog': 0 }, retries: 1, continuations: 2, stalls: 0 });
    expect(report.counts).toMatchObject({ jobs: 17, byState: { completed: 14, cancelled: 2, failed: 1 }, messagesSent: 1, messagesReceived: 1, children: 1, cancels: 2, ticks: 3, serviceRuns: 2, lockWrites: 3, lockRefusals: 1, limitSamples: 1 });
    expect(formatReport(report)).toMatch(/violations: 0$/);
  });

  describe('every enqueued job ends terminal, in the state its history explains', () => {
    it('a job left running', () => expect(caught(cleanHistory().row(1, { state: 'running', resultRef: [1, 1] }))).toEqual(only('terminal', 1)));
    it('a job lost (enqueued, no row)', () => {
      const h = cleanHistory();
      h.rows.delete(8);
      expect(caught(h)).toEqual(only('terminal', 8));
    });
    it('completed with the result of a run that was not its last', () => {
      const h = cleanHistory().row(3, { attempt: 2, checkpointRef: [1, 1], result: withRef({ token: 1, seq: 1 }) });
      h.write(3, 'result', 1, 1, 103, 11.5);
      expect(caught(h)).toEqual(only('terminal', 3));
    });
    it('cancelled with no cancel in its history', () => expect(caught(cleanHistory().row(1, { state: 'cancelled', resultRef: [1, 1] }))).toEqual(only('terminal', 1)));
    it('failed with attempts left and no reason to stop', () => {
      const h = cleanHistory().row(11, { state: 'failed', maxAttempts: 3, errors: [{ attempt: 1, time: new Date(111), message: 'doomed', stack: null }] });
      expect(caught(h)).toEqual(only('terminal', 11));
    });
  });

  it('a job run again with no fault on its holder, reported with the evidence', () => {
    const h = cleanHistory().start(1, 2, 105, 30).write(1, 'result', 2, 1, 105, 31).end(1, 2, 105, 32, 'returned').row(1, { resultRef: [2, 1] });
    expect(caught(h)).toEqual(only('rerun', 1));
    expect(formatReport(checkSoak(h.input()))).toContain('violations: 1\n  [rerun] job 1: run 2 (pid 105) after run 1 (pid 100, returned), and no sigkill/sigterm/sigstop/net-cut hit pid 100 between');
  });

  it('a run claimed just before its holder froze, whose handler began after the freeze and after the newer run ended: explained by the freeze, no overlap (seen in a soak)', () => {
    // Claimed at 400 by pid 300, frozen over [401, 420]; run 2 elsewhere over [410, 412]; run 1's handler starts at 421 and its result write is refused.
    const frozenAfterClaim = (freeze: boolean) => {
      const h = cleanHistory().add(399, 2, { kind: 'job-enqueued', jobId: 32, task: 'short', queue: 'default' });
      if (freeze) h.fault('sigstop', 300, 401, 420);
      h.start(32, 2, 301, 410).write(32, 'result', 2, 1, 301, 411).end(32, 2, 301, 412, 'returned');
      return h.start(32, 1, 300, 421, { claimedAt: 400 }).write(32, 'result', 1, 1, 300, 421.5).end(32, 1, 300, 422, 'returned').row(32, { resultRef: [2, 1] });
    };
    expect(caught(frozenAfterClaim(true))).toEqual([]);
    expect(caught(frozenAfterClaim(false))).toEqual(only('rerun', 32));
  });

  it('on SQLite, runs that lost their leases while another process was frozen (holding the one write lock): explained as a stall, and only where freezes stall every process', () => {
    // Pid 400 runs job 33 from 500; pid 401 is frozen over [505, 530]; pid 402 runs it again at 531 while 400's handler, its lease gone, ends at 532.
    const h = cleanHistory().add(499, 2, { kind: 'job-enqueued', jobId: 33, task: 'short', queue: 'default' }).fault('sigstop', 401, 505, 530);
    h.start(33, 1, 400, 500).write(33, 'result', 1, 1, 400, 520).end(33, 1, 400, 532, 'aborted', 'lease-lost');
    h.start(33, 2, 402, 531).write(33, 'result', 2, 1, 402, 531.5).end(33, 2, 402, 531.6, 'returned').row(33, { resultRef: [2, 1] });
    expect(caught(h)).toEqual(['rerun 33', 'overlap 33']);
    const stalled = checkSoak({ ...h.input(), freezeStallsAll: true });
    expect(stalled.violations).toEqual([]);
    expect(stalled.reRuns.stalls).toBe(1);
  });

  it('two runs overlapping when the holder was SIGTERMed, not frozen or cut off (unless past the abandon time)', () => {
    const h = cleanHistory().add(299, 2, { kind: 'job-enqueued', jobId: 30, task: 'long', queue: 'default' });
    h.start(30, 1, 200, 300).fault('sigterm', 200, 301).start(30, 2, 201, 305).write(30, 'result', 2, 1, 201, 305.5).end(30, 2, 201, 306, 'returned');
    h.add(310, 3, { kind: 'process-exit', targetPid: 200, code: 0, signal: null }).row(30, { resultRef: [2, 1] });
    expect(caught(h)).toEqual(only('overlap', 30));
    expect(caught(h, { abandonAfterMs: 10 })).toEqual(only('overlap', 30)); // handed back sooner than drain + grace
    expect(caught(h, { abandonAfterMs: 3 })).toEqual([]); // abandoned after drain + grace: by design
  });

  describe('no write of a stale run is accepted', () => {
    it('progress the frozen holder wrote after the takeover', () => expect(caught(cleanHistory().row(3, { attempt: 2, resultRef: [2, 1], checkpointRef: [1, 1], progressRef: [1, 2] }))).toEqual(only('stale-write', 3)));
    it('a checkpoint written after the takeover, then seen by a later run', () => {
      const h = cleanHistory().write(3, 'checkpoint', 1, 3, 103, 33);
      h.start(3, 3, 104, 37, { attempt: 3, seen: [1, 3] }).end(3, 3, 104, 38, 'threw');
      expect(caught(h)).toContain('stale-write 3');
    });
    it('a step result the frozen holder saved after the takeover', () => expect(caught(cleanHistory().step(3, 1, 103, 's', 41))).toEqual(only('stale-write', 3)));
  });

  describe('a completed step never ran again', () => {
    it('a step run again after its result was returned', () => expect(caught(cleanHistory().add(21.2, 102, { kind: 'step-start', jobId: 2, token: 2, step: 'a' }))).toEqual(only('step-once', 2)));
    it('two saves of one step', () => expect(caught(cleanHistory().add(23, 102, { kind: 'step-result', jobId: 2, token: 2, step: 'b', from: 1 }))).toEqual(only('step-once', 2)));
  });

  describe('every message is received exactly once', () => {
    it('one message received by two receives', () => expect(caught(cleanHistory().add(61.2, 102, { kind: 'message-received', jobId: 4, token: 2, topic: 'go', occurrence: 2, messageId: 'm1' }))).toEqual(only('message-once', 4)));
    it('a message sent to a job that completed without it', () => expect(caught(cleanHistory().add(56, 2, { kind: 'message-sent', jobId: 4, topic: 'go', messageId: 'm2' }))).toEqual(only('message-once', 4)));
    it('a message received that nobody sent', () => expect(caught(cleanHistory().add(61.3, 102, { kind: 'message-received', jobId: 4, token: 2, topic: 'go', occurrence: 2, messageId: 'm9' }))).toEqual(only('message-once', 4)));
  });

  describe('every child enqueued once; no parent waits for an ended child', () => {
    it('a replay that enqueued a second child', () => {
      const h = cleanHistory().add(75.6, 100, { kind: 'child-enqueued', jobId: 5, token: 2, step: 'c', childId: 60 });
      h.start(60, 1, 102, 76).write(60, 'result', 1, 1, 102, 76.5).end(60, 1, 102, 77, 'returned').row(60, { resultRef: [1, 1], parentId: 5 });
      expect(caught(h)).toEqual(only('child-once', 5));
    });
    it('a child row of a completed parent that no enqueue returned', () => {
      const h = cleanHistory().start(61, 1, 102, 76).write(61, 'result', 1, 1, 102, 76.5).end(61, 1, 102, 77, 'returned').row(61, { resultRef: [1, 1], parentId: 5 });
      expect(caught(h)).toEqual(only('child-once', 61));
    });
    it('a parent still waiting for a child that ended', () => {
      const h = cleanHistory().row(5, { task: 'parent', state: 'queued', wait: { kind: 'children', ids: [6], until: new Date(253402300799999) } });
      expect(caught(h)).toEqual(['terminal 5', 'child-wait 5']);
    });
  });

  describe('cancels stick', () => {
    it('a cancel of a running job that ended completed', () => {
      const h = cleanHistory().row(7, { task: 'long', resultRef: [1, 1] }).write(7, 'result', 1, 1, 100, 81.5);
      expect(caught(h)).toEqual(only('cancel', 7));
    });
    it('not a running job whose handler returned before the request reached it (completed, as documented), but one that saw the cancel and still completed', () => {
      const h = cleanHistory().add(398, 2, { kind: 'job-enqueued', jobId: 34, task: 'short', queue: 'default' });
      h.start(34, 1, 105, 400).add(401, 4, { kind: 'cancel-requested', jobId: 34, outcome: 'requested', stateSeen: 'running', startedAt: 399 });
      h.write(34, 'result', 1, 1, 105, 401.5).end(34, 1, 105, 401.6, 'returned').row(34, { resultRef: [1, 1] });
      expect(caught(h)).toEqual([]);
      h.entries.splice(h.entries.findIndex((e) => e.kind === 'run-end' && e.jobId === 34), 1);
      h.end(34, 1, 105, 401.6, 'aborted', 'cancelled');
      expect(caught(h)).toEqual(only('cancel', 34));
    });
    it('a job claimed after its cancel', () => {
      const h = cleanHistory().start(8, 1, 105, 90).end(8, 1, 105, 91, 'aborted', 'cancelled');
      expect(caught(h)).toEqual(only('cancel', 8));
    });
    it('a run after a run aborted by its cancel', () => {
      const h = cleanHistory().start(7, 2, 105, 84, { claimedAt: 80.5 }).end(7, 2, 105, 85, 'aborted', 'cancelled');
      expect(caught(h)).toEqual(['cancel 7', 'cancel 7']); // claimed after the cancel, and after a run its cancel aborted
    });
    it('not a run claimed before the cancel that recorded its start after it (the answer saw that claim)', () => {
      const h = cleanHistory().add(298, 2, { kind: 'job-enqueued', jobId: 31, task: 'long', queue: 'default' });
      h.add(300, 4, { kind: 'cancel-requested', jobId: 31, outcome: 'requested', stateSeen: 'running', startedAt: 299 });
      h.start(31, 1, 105, 301, { claimedAt: 299 }).end(31, 1, 105, 302, 'aborted', 'cancelled').row(31, { task: 'long', state: 'cancelled' });
      expect(caught(h)).toEqual([]);
    });
  });

  describe('every tick exactly once', () => {
    it('a tick run as two jobs', () => expect(caught(cleanHistory().simpleJob(23, 1, 105, 2000).add(2001.6, 105, { kind: 'tick-run', schedule: 'every-second', instant: 2000, jobId: 23 }))).toEqual(only('tick-once')));
    it('a tick that never ran', () => {
      const h = cleanHistory();
      h.entries.splice(h.entries.findIndex((e) => e.kind === 'tick-run' && e.instant === 3000), 1);
      expect(caught(h)).toEqual(only('tick-once'));
    });
  });

  it('service runs overlapping with no lease loss (and not when the first holder was frozen)', () => {
    const overlapping = () => cleanHistory().add(15, 105, { kind: 'service-start', service: 'sweeper', token: 3 }).add(16, 105, { kind: 'service-end', service: 'sweeper', token: 3 });
    expect(caught(overlapping())).toEqual(only('service-overlap'));
    expect(caught(overlapping().fault('sigstop', 100, 11, 19))).toEqual([]);
  });

  it('a lock token going backwards, or a valid token refused', () => {
    expect(caught(cleanHistory().add(40, 6, { kind: 'lock-write', lock: 'L', token: 1, accepted: true, highest: 2 }))).toEqual(only('lock-monotonic'));
    expect(caught(cleanHistory().add(40, 6, { kind: 'lock-write', lock: 'L', token: 3, accepted: false, highest: 2 }))).toEqual(only('lock-monotonic'));
  });

  it('more running than a limit, or more claims in a window than a rate limit', () => {
    expect(caught(cleanHistory().add(60, 7, { kind: 'limit-sample', scope: 'key', name: 'tenant-1', running: 3, limit: 2 }))).toEqual(only('limit'));
    expect(caught(cleanHistory().simpleJob(43, 1, 105, 4200, { queue: 'rated', claimedAt: 4200 }))).toEqual(only('limit'));
  });
});
