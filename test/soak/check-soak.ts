/**
 * The soak's checker: decides every invariant of issue 34 (item 4) from the external
 * ledger and Baton's final job rows, and reports the counts, the faults by kind, the
 * re-runs each fault explains, and every violation with the job and the evidence.
 * What each invariant means and how it is decided: docs/reliability.md, "The checker".
 * The final rows come from Baton's public API: `allFullJobs(baton)` (test/helpers/client.ts).
 */
import { checkTicks, checkServices, checkLocks, checkLimits } from './check-coordination.js';
import { checkCancels, checkOverlaps, checkReRuns, checkStaleWrites, checkTerminal } from './check-runs.js';
import type { SoakCheckInput, SoakReport, Violation } from './check-types.js';
import { checkChildren, checkChildWaits, checkMessages, checkSteps } from './check-workflow.js';
import { indexHistory } from './history.js';
import { FAULT_KINDS, countByKind } from './nemesis-plan.js';

export type { FinalJob, SoakCheckInput, SoakReport, Violation } from './check-types.js';

/**
 * Checks a soak. Pure: reads only `input`.
 * @returns the report; the soak passed when `violations` is empty
 */
export function checkSoak(input: SoakCheckInput): SoakReport {
  const history = indexHistory(input.entries, { freezeStallsAll: input.freezeStallsAll ?? false });
  const rows = new Map(input.jobs.map((j) => [j.id, j]));
  const violations: Violation[] = [];
  const reRuns: SoakReport['reRuns'] = { explained: countByKind([]), retries: 0, continuations: 0, stalls: 0 };

  checkTerminal(input, history, rows, violations);
  checkReRuns(history, reRuns, violations);
  checkOverlaps(history, input.abandonAfterMs, violations);
  checkStaleWrites(history, rows, violations);
  checkCancels(history, rows, violations);
  checkSteps(history, violations);
  checkMessages(history, rows, violations);
  checkChildren(history, rows, violations);
  checkChildWaits(rows, violations);
  checkTicks(history, input.schedules ?? [], violations);
  const serviceRuns = checkServices(history, violations);
  const lockRefusals = checkLocks(history, violations);
  checkLimits(history, input.rateLimits ?? [], violations);

  const byState: Record<string, number> = {};
  for (const job of input.jobs) byState[job.state] = (byState[job.state] ?? 0) + 1;
  return {
    counts: {
      jobs: input.jobs.length,
      byState,
      runs: history.of('run-start').length,
      events: input.entries.length,
      stepsRun: history.of('step-start').length,
      messagesSent: new Set(history.of('message-sent').map((m) => m.messageId)).size,
      messagesReceived: new Set(history.of('message-received').map((m) => m.messageId).filter((id) => id !== null)).size,
      children: new Set(history.of('child-enqueued').map((c) => c.childId)).size,
      cancels: history.of('cancel-requested').length,
      ticks: history.of('tick-run').length,
      serviceRuns,
      lockWrites: history.of('lock-write').length,
      lockRefusals,
      limitSamples: history.of('limit-sample').length,
    },
    faults: countByKind(history.faults.map((f) => ({ kind: f.fault }))),
    reRuns,
    violations,
  };
}

/** The report in a few lines, for the soak's output: counts, faults, re-runs, then the first `most` violations. */
export function formatReport(report: SoakReport, most = 20): string {
  const faults = FAULT_KINDS.map((k) => `${k} ${report.faults[k]}`).join(', ');
  const explained = FAULT_KINDS.filter((k) => report.reRuns.explained[k] > 0).map((k) => `${report.reRuns.explained[k]} by ${k}`).join(', ') || 'none';
  return [
    `jobs ${report.counts.jobs} ${JSON.stringify(report.counts.byState)}; runs ${report.counts.runs}; ledger events ${report.counts.events}`,
    `faults: ${faults}`,
    `re-runs explained: ${explained}; by a freeze stalling the database ${report.reRuns.stalls}; retries ${report.reRuns.retries}; continuations ${report.reRuns.continuations}`,
    `lock writes ${report.counts.lockWrites} (${report.counts.lockRefusals} stale refused); ticks ${report.counts.ticks}; service runs ${report.counts.serviceRuns}`,
    `violations: ${report.violations.length}`,
    ...report.violations.slice(0, most).map((v) => `  [${v.invariant}]${v.jobId === undefined ? '' : ` job ${v.jobId}`}${v.subject === undefined ? '' : ` ${v.subject}`}: ${v.why}`),
  ].join('\n');
}
