/**
 * The invariants about a job's runs: terminal states explained by history, re-runs only
 * when the nemesis hit the holder, overlaps only across a lease loss, no stale write
 * accepted, and cancels that stick.
 */
import type { FinalJob, SoakCheckInput, SoakReport, Violation } from './check-types.js';
import type { History, Run } from './history.js';
import { HOLDER_FAULTS, LEASE_LOSS_FAULTS, type WriteRef } from './ledger-events.js';
import { progressRef, refOf } from './write-ref.js';

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/**
 * Every job the ledger or Baton knows ended terminal, in the state its history explains:
 * - completed: its result was written by its last run (the highest lease token);
 * - cancelled: a cancel of it or of an ancestor was accepted, or its `cancelReason` is a strategy's;
 * - failed: it has errors, and the last one exhausted its attempts, was non-retryable, or a child of it failed or was cancelled.
 */
export function checkTerminal(input: SoakCheckInput, history: History, rows: Map<number, FinalJob>, out: Violation[]): void {
  const known = new Set<number>(rows.keys());
  for (const e of history.of('job-enqueued')) known.add(e.jobId);
  for (const e of history.of('child-enqueued')) known.add(e.childId);
  for (const e of history.of('tick-run')) known.add(e.jobId);
  const cancelled = new Set(history.of('cancel-requested').filter((c) => c.outcome !== 'unchanged').map((c) => c.jobId));
  const childrenOf = new Map<number, FinalJob[]>();
  for (const row of rows.values()) if (row.parentId !== null) childrenOf.set(row.parentId, [...(childrenOf.get(row.parentId) ?? []), row]);
  const ancestorCancelled = (row: FinalJob): boolean => {
    for (let r: FinalJob | undefined = row; r; r = r.parentId === null ? undefined : rows.get(r.parentId)) if (cancelled.has(r.id)) return true;
    return false;
  };
  const fail = (jobId: number, why: string) => out.push({ invariant: 'terminal', jobId, why });

  for (const id of [...known].sort((a, b) => a - b)) {
    const row = rows.get(id);
    if (!row) {
      fail(id, 'lost: the ledger shows it enqueued, Baton has no row of it');
      continue;
    }
    if (!TERMINAL.has(row.state)) {
      fail(id, `not terminal: ${row.state}${row.wait ? ` waiting for ${JSON.stringify(row.wait)}` : ''}`);
      continue;
    }
    const runs = history.runs.get(id) ?? [];
    if (row.state === 'completed') {
      const last = runs.at(-1);
      const ref = refOf(row.result);
      if (!last) fail(id, 'completed, but no run of it is in the ledger');
      else if (!ref || ref.token !== last.token) fail(id, `completed with the result of run ${ref?.token ?? 'none'}, but its last run is ${last.token}`);
    } else if (row.state === 'cancelled') {
      if (!ancestorCancelled(row) && !input.explainedCancelReason?.test(row.cancelReason ?? '')) fail(id, `cancelled (reason ${JSON.stringify(row.cancelReason)}) with no cancel of it or its parents in the ledger`);
    } else {
      const lastError = row.errors.at(-1);
      const childEnded = (childrenOf.get(id) ?? []).some((c) => c.state === 'failed' || c.state === 'cancelled');
      const nonRetryable = lastError !== undefined && input.nonRetryableError?.test(lastError.message) === true;
      if (!lastError) fail(id, 'failed with no error recorded');
      else if (lastError.attempt < row.maxAttempts && !nonRetryable && !childEnded) fail(id, `failed at attempt ${lastError.attempt} of ${row.maxAttempts}: ${lastError.message}`);
    }
  }
}

/**
 * Why each run after a job's first exists. A run after a wait or snooze is a continuation,
 * after a throw or timeout a retry; after a shutdown it needs a nemesis SIGTERM of the
 * holder, and after anything else (returned but not stored, lease lost, no end) a kill,
 * SIGTERM, freeze or cut-off of the holder between its claim and the next run's start (or,
 * where a freeze stalls every process, a freeze of any: counted as `stalls`).
 * A run after a run aborted by its cancel is a `cancel` violation.
 */
export function checkReRuns(history: History, reRuns: SoakReport['reRuns'], out: Violation[]): void {
  for (const [jobId, runs] of history.runs) {
    for (let i = 1; i < runs.length; i++) {
      const [before, run] = [runs[i - 1]!, runs[i]!];
      const end = before.end;
      if (end?.outcome === 'suspended') reRuns.continuations++;
      else if (end?.outcome === 'threw' || (end?.outcome === 'aborted' && end.reason === 'timeout')) reRuns.retries++;
      else if (end?.outcome === 'aborted' && end.reason === 'cancelled') out.push({ invariant: 'cancel', jobId, why: `run ${run.token} started after run ${before.token} was aborted by a cancel` });
      else {
        const kinds = end?.outcome === 'aborted' && end.reason === 'shutdown' ? (['sigterm'] as const) : HOLDER_FAULTS;
        const why = history.explain(before.pid, before.heldFrom, run.start, kinds);
        if (why?.stall) reRuns.stalls++;
        else if (why) reRuns.explained[why.fault.fault]++;
        else out.push({ invariant: 'rerun', jobId, why: `run ${run.token} (pid ${run.pid}) after run ${before.token} (pid ${before.pid}, ${describeEnd(before)}), and no ${kinds.join('/')} hit pid ${before.pid} between` });
      }
    }
  }
}

const describeEnd = (run: Run) => (run.end ? `${run.end.outcome}${run.end.reason ? ` (${run.end.reason})` : ''}` : 'no end');

/**
 * Two runs of one job overlapped (ran at the same time) only when the older one's holder
 * was frozen or cut off first (it lost its lease), or was SIGTERMed at least
 * `abandonAfterMs` before the newer run started (its handler outlived the drain and abort
 * grace: abandoned and handed back by design). An older run whose handler began only
 * after the newer one had ended (claimed, then frozen before its first line) did not
 * overlap it: whether its writes were refused is {@link checkStaleWrites}'s question.
 */
export function checkOverlaps(history: History, abandonAfterMs: number | undefined, out: Violation[]): void {
  for (const [jobId, runs] of history.runs) {
    for (const [i, older] of runs.entries()) {
      for (const newer of runs.slice(i + 1)) {
        if (newer.start >= older.endAt || older.start >= newer.endAt) continue;
        const term = abandonAfterMs === undefined ? undefined : history.hit(older.pid, older.heldFrom, newer.start - abandonAfterMs, ['sigterm']);
        if (!term && !history.explain(older.pid, older.heldFrom, newer.start, LEASE_LOSS_FAULTS)) {
          out.push({ invariant: 'overlap', jobId, why: `run ${newer.token} (pid ${newer.pid}) started at ${newer.start} while run ${older.token} (pid ${older.pid}) ran until ${older.endAt}, and pid ${older.pid} was not frozen or cut off` });
        }
      }
    }
  }
}

/**
 * No stale write landed: a checkpoint, progress or result write is stale when a newer run of
 * the job had started before it was made. What landed is read from the final row and from
 * the checkpoint each run was given; a landed write the ledger never recorded is reported too.
 */
export function checkStaleWrites(history: History, rows: Map<number, FinalJob>, out: Violation[]): void {
  const writes = new Map<string, number>();
  for (const w of history.of('write')) writes.set(`${w.jobId}:${w.what}:${w.ref.token}:${w.ref.seq}`, w.at);
  const landed = (jobId: number, what: 'progress' | 'checkpoint' | 'result', ref: WriteRef | null, seenBy: string) => {
    if (!ref) return;
    const at = writes.get(`${jobId}:${what}:${ref.token}:${ref.seq}`);
    if (at === undefined) {
      out.push({ invariant: 'stale-write', jobId, why: `${seenBy} holds ${what} write ${ref.token}:${ref.seq}, which no run recorded making` });
      return;
    }
    const newer = (history.runs.get(jobId) ?? []).find((r) => r.token > ref.token && r.start < at);
    if (newer) out.push({ invariant: 'stale-write', jobId, why: `${what} write ${ref.token}:${ref.seq} made at ${at} was accepted (${seenBy}), though run ${newer.token} had started at ${newer.start}` });
  };
  for (const row of rows.values()) {
    landed(row.id, 'checkpoint', refOf(row.checkpoint), 'the final row');
    landed(row.id, 'progress', progressRef(row.progress), 'the final row');
    landed(row.id, 'result', refOf(row.result), 'the final row');
  }
  for (const runs of history.runs.values()) for (const run of runs) landed(run.jobId, 'checkpoint', run.checkpointSeen, `run ${run.token}'s checkpoint`);
}

/**
 * Every cancel Baton accepted (outcome `cancelled` or `requested`) ended the job
 * `cancelled` — unless, for a `requested` one, the job's last run returned before the
 * request reached it (its signal never aborted) and the job ended `completed`, as
 * docs/cancellation.md promises — and no run of it was claimed after the cancel: none claimed later than the
 * job's `startedAt` in the cancel's answer (its last claim before it), compared in the
 * database's own times, so no clock is trusted.
 */
export function checkCancels(history: History, rows: Map<number, FinalJob>, out: Violation[]): void {
  for (const cancel of history.of('cancel-requested')) {
    if (cancel.outcome === 'unchanged') continue;
    const row = rows.get(cancel.jobId);
    // A handler that returned before the request reached it has finished (docs/cancellation.md): completed, with its result.
    const finishedFirst = cancel.outcome === 'requested' && row?.state === 'completed' && history.runs.get(cancel.jobId)?.at(-1)?.end?.outcome === 'returned';
    if (row && row.state !== 'cancelled' && !finishedFirst) out.push({ invariant: 'cancel', jobId: cancel.jobId, why: `cancel answered ${cancel.outcome} (was ${cancel.stateSeen}) but the job ended ${row.state}` });
    for (const run of history.runs.get(cancel.jobId) ?? []) {
      if (cancel.startedAt === null || run.claimedAt > cancel.startedAt) {
        out.push({ invariant: 'cancel', jobId: cancel.jobId, why: `run ${run.token} was claimed at ${run.claimedAt}, after the cancel at ${cancel.at} (the job's last claim then: ${cancel.startedAt ?? 'none'})` });
      }
    }
  }
}
