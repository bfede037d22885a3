import type { ParsedCadence } from './cron.js';
import type { CatchUp } from './schedule.js';

/**
 * The on-time grace, 10 s: a due tick is "on time" when the scheduler sees it within
 * this many ms after its time, and "missed" (downtime) when older; missed ticks follow
 * the catchUp policy, on-time ticks are always enqueued. Generous, so a busy or
 * briefly paused scheduler loses nothing under any policy; documented in
 * docs/schedules-and-services.md. Not configurable.
 */
export const ON_TIME_GRACE_MS = 10_000;

/**
 * The longest gap between two passes of one scheduler that still counts as that
 * scheduler running late rather than down, 60 s: a tick that came due since its previous
 * pass is on time when that pass began at most this long ago, however late this pass is
 * (a slow store, a busy event loop, a lock another process held), so a scheduler that was
 * running never drops a tick as missed (issue 31). A longer gap (a process frozen, a
 * machine suspended) is downtime, and its ticks follow the catchUp policy.
 */
export const MAX_PASS_GAP_MS = 60_000;

/**
 * The on-time grace of a pass at `now` whose scheduler's previous pass began at
 * `previousPass` (ms since the epoch; undefined for its first pass): at least
 * {@link ON_TIME_GRACE_MS}, stretched to cover the gap since that pass up to
 * {@link MAX_PASS_GAP_MS}.
 */
export function onTimeGrace(now: number, previousPass: number | undefined): number {
  if (previousPass === undefined || now - previousPass > MAX_PASS_GAP_MS) return ON_TIME_GRACE_MS;
  return Math.max(ON_TIME_GRACE_MS, now - previousPass);
}

/** Ticks walked one by one before jumping near `now` (a schedule that was down for years). */
const MAX_WALK = 10_000;

/** What to do for one due schedule. */
export interface TickPlan {
  /** Ticks to enqueue, oldest first (ms since the epoch). */
  enqueue: number[];
  /** Due ticks not enqueued (missed ones under none/latest, or beyond catchUpLimit under all); a lower bound after a very long outage. */
  missed: number;
  /** The oldest missed tick and the newest one still known (walked), when any were missed. */
  missedRange: { from: number; to: number } | null;
  /** The first tick after `now`; null when the cadence never fires again. */
  next: number | null;
}

/**
 * Plans a due schedule whose stored next run is `first` (a tick, <= now): which of
 * the ticks in [first, now] to enqueue under `catchUp`, and the next run after now.
 * - on-time ticks (within `graceMs`, {@link onTimeGrace}) are enqueued under every policy;
 * - `none`: missed ticks are dropped; `latest`: the newest missed tick is enqueued
 *   when no tick is on time; `all`: every missed tick, the most recent `limit`.
 * At most `limit` ticks are enqueued in any case.
 */
export function planTicks(cadence: ParsedCadence, first: number, now: number, catchUp: CatchUp, limit: number, graceMs = ON_TIME_GRACE_MS): TickPlan {
  const kept: number[] = []; // the newest `limit` due ticks
  let count = 0;
  let oldest: number | null = null;
  let steps = 0;
  let t: number | null = first;
  while (t !== null && t <= now) {
    count++;
    oldest ??= t;
    kept.push(t);
    if (kept.length > limit) kept.shift();
    if (++steps === MAX_WALK) {
      const near = tickNear(cadence, now);
      if (near !== null && near > t) {
        t = near;
        continue;
      }
    }
    t = cadence.next(new Date(t))?.getTime() ?? null;
  }
  const onTime = kept.filter((tick) => now - tick <= graceMs);
  const late = kept.filter((tick) => now - tick > graceMs);
  let enqueue: number[];
  if (catchUp === 'all') enqueue = kept;
  else if (onTime.length > 0 || late.length === 0) enqueue = onTime;
  else enqueue = catchUp === 'latest' ? [late.at(-1)!] : [];
  const missed = count - enqueue.length;
  let missedRange: TickPlan['missedRange'] = null;
  if (missed > 0) {
    const dropped = kept.filter((tick) => !enqueue.includes(tick));
    missedRange = { from: oldest!, to: dropped.at(-1) ?? oldest! };
  }
  return { enqueue, missed, missedRange, next: t };
}

/** A tick shortly before `now`, found by looking back ever further (1 min … 10 years). */
function tickNear(cadence: ParsedCadence, now: number): number | null {
  for (const back of [60e3, 3600e3, 86_400e3, 32 * 86_400e3, 367 * 86_400e3, 3670 * 86_400e3]) {
    const t = cadence.next(new Date(now - back))?.getTime();
    if (t !== undefined && t <= now) return t;
  }
  return null;
}
