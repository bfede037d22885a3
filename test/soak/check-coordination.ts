/**
 * The invariants of fleet-wide coordination: schedule ticks exactly once, services that
 * never overlap, a fencing store that never goes backwards, and limits that hold.
 */
import type { RateLimitRule, ScheduleWindow, Violation } from './check-types.js';
import type { History } from './history.js';
import { LEASE_LOSS_FAULTS } from './ledger-events.js';

/**
 * Each tick ran as one job; every tick of the schedule due in the window ran. The grid is
 * anchored on a tick that ran (a schedule's ticks need not fall on multiples of its period
 * from the epoch); a tick off that grid is reported too.
 */
export function checkTicks(history: History, schedules: readonly ScheduleWindow[], out: Violation[]): void {
  for (const schedule of schedules) {
    const jobsByTick = new Map<number, Set<number>>();
    for (const tick of history.of('tick-run').filter((t) => t.schedule === schedule.name)) {
      jobsByTick.set(tick.instant, (jobsByTick.get(tick.instant) ?? new Set()).add(tick.jobId));
    }
    const subject = schedule.name;
    for (const [instant, jobs] of jobsByTick) {
      if (jobs.size > 1) out.push({ invariant: 'tick-once', subject, why: `tick ${new Date(instant).toISOString()} ran as ${jobs.size} jobs: ${[...jobs].join(', ')}` });
    }
    const anchor = [...jobsByTick.keys()].sort((a, b) => a - b).find((t) => t >= schedule.from && t <= schedule.to);
    if (anchor === undefined) {
      out.push({ invariant: 'tick-once', subject, why: `no tick ran in [${schedule.from}, ${schedule.to}]` });
      continue;
    }
    const first = anchor - Math.floor((anchor - schedule.from) / schedule.everyMs) * schedule.everyMs;
    for (let t = first; t <= schedule.to; t += schedule.everyMs) {
      if (!jobsByTick.has(t)) out.push({ invariant: 'tick-once', subject, why: `tick ${new Date(t).toISOString()} never ran` });
    }
    for (const instant of jobsByTick.keys()) {
      if ((((instant - anchor) % schedule.everyMs) + schedule.everyMs) % schedule.everyMs !== 0) out.push({ invariant: 'tick-once', subject, why: `tick ${new Date(instant).toISOString()} is off the schedule's grid` });
    }
  }
}

/**
 * Per service, a run started only after the previous one ended, unless the previous
 * holder had been frozen or cut off (it lost the lease; its outcome is not stored).
 * @returns the number of service runs
 */
export function checkServices(history: History, out: Violation[]): number {
  const ends = history.of('service-end');
  const runs = history.of('service-start').map((start) => ({
    start,
    endAt: ends.find((e) => e.service === start.service && e.token === start.token && e.pid === start.pid && e.at >= start.at)?.at ?? history.deathAfter(start.pid, start.at),
  }));
  runs.sort((a, b) => a.start.at - b.start.at);
  for (const [i, older] of runs.entries()) {
    for (const newer of runs.slice(i + 1).filter((r) => r.start.service === older.start.service)) {
      if (newer.start.at >= older.endAt) continue;
      if (history.explain(older.start.pid, older.start.at, newer.start.at, LEASE_LOSS_FAULTS)) continue;
      out.push({
        invariant: 'service-overlap',
        subject: older.start.service,
        why: `run ${newer.start.token} (pid ${newer.start.pid}) started at ${newer.start.at} while run ${older.start.token} (pid ${older.start.pid}) ran until ${older.endAt}, and pid ${older.start.pid} was not frozen or cut off`,
      });
    }
  }
  return runs.length;
}

/**
 * Per lock, in the store's order: no accepted token is lower than one accepted before, and
 * a refused token was lower than the highest (else the store refused a valid holder).
 * @returns the number of refused writes
 */
export function checkLocks(history: History, out: Violation[]): number {
  const highest = new Map<string, number>();
  let refusals = 0;
  const writes = [...history.of('lock-write')].sort((a, b) => a.pid - b.pid || a.seq - b.seq);
  for (const write of writes) {
    const before = highest.get(write.lock) ?? -Infinity;
    if (write.accepted) {
      if (write.token < before) out.push({ invariant: 'lock-monotonic', subject: write.lock, why: `token ${write.token} accepted after token ${before}` });
      highest.set(write.lock, Math.max(before, write.token));
    } else {
      refusals++;
      if (write.token >= before) out.push({ invariant: 'lock-monotonic', subject: write.lock, why: `token ${write.token} refused though the highest accepted was ${before}` });
    }
  }
  return refusals;
}

/**
 * Every limit sample within its limit, and per rate limit no window of `periodMs` holding
 * more than `limit` claims (the database's claim times of the runs in the ledger: a lower
 * bound of the claims made, so an excess found is real).
 */
export function checkLimits(history: History, rateLimits: readonly RateLimitRule[], out: Violation[]): void {
  for (const sample of history.of('limit-sample')) {
    if (sample.running > sample.limit) out.push({ invariant: 'limit', subject: `${sample.scope} ${sample.name}`, why: `${sample.running} running at ${sample.at}, limit ${sample.limit}` });
  }
  const runs = [...history.runs.values()].flat();
  for (const rule of rateLimits) {
    const claims = runs.filter((r) => (rule.scope === 'queue' ? r.queue : r.key) === rule.name).map((r) => r.claimedAt).sort((a, b) => a - b);
    for (let i = 0, j = 0; i < claims.length; i++) {
      while (j < claims.length && claims[j]! < claims[i]! + rule.periodMs) j++;
      if (j - i > rule.limit) {
        out.push({ invariant: 'limit', subject: `rate ${rule.scope} ${rule.name}`, why: `${j - i} claims in the ${rule.periodMs} ms from ${claims[i]}, limit ${rule.limit}` });
        break;
      }
    }
  }
}
