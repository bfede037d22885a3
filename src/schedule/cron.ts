/**
 * Cadences of recurring schedules: a cron expression in an IANA time zone, or a fixed
 * interval in milliseconds. Parsing, field matching and time-zone arithmetic are
 * croner's (v10, `new Cron(pattern, { timezone, mode: '5-or-6-parts', paused: true })`,
 * queried with `nextRun`); this module validates a cadence, picks croner's options and
 * guards the few answers of croner that would break exactly-once scheduling.
 *
 * Policies (asserted as exact instants in test/schedule/cron.test.ts):
 * - Fields: 5 (minute first) or 6 (second first). Year fields (7 parts) are refused.
 *   Nicknames (`@daily`…), names (`MON`, `JAN`), `L`, `W`, `#` are croner's. An
 *   invalid field is refused with its name (`minute field "*\/0": …`).
 * - Steps: `*\/N`, `A-B/N`, and the numeric-prefix form `A/N` that cronie and most
 *   crontabs accept, meaning A through the field's maximum every N (`5/20` in minutes:
 *   5, 25, 45; croner's `sloppyRanges`). The start must lie in the field's range
 *   (croner would silently select nothing for `70/5`), and a step needs a start
 *   (`/10` is refused, as cronie does). Croner's day-of-week maximum is 6, so `1/2`
 *   there is 1, 3, 5 (cronie would add 7, Sunday).
 * - A cron that can never fire (`0 0 30 2 *`, `0 0 31 2,4,6,9,11 *`: no listed day
 *   exists in a listed month) is valid syntax whose `next` is always null — decided
 *   here from the fields (croner v10 overflows its stack on some of them), so a
 *   schedule refuses it as "never fires".
 * - Day of month and day of week: pure OR when both are restricted (croner's default,
 *   `domAndDow: false`), also when a field starts with `*`: `0 0 *\/3 * 1-5` fires on
 *   days 1, 4, 7… OR on weekdays. (Vixie/cronie would AND that one; we deliberately do
 *   not second-guess croner.) Prefix the day of week with `+` (`0 0 1 * +MON`) to AND.
 * - DST, croner's behaviour: a local time inside the repeated hour (fall back) fires
 *   once, at its first occurrence — for every pattern, `* * * * *` included, which
 *   therefore does not fire during the second copy of the repeated hour. A local time
 *   inside the gap (spring forward) is shifted by the length of the gap (02:30 in a
 *   one-hour gap fires at 03:30 of the new offset) when the query starts before the
 *   gap, and skipped when it starts after the gap began; a scheduler that chains
 *   `next(previousFire)` always gets the shifted fire, exactly once.
 * - `next` is strictly after its argument. Croner v10 returns an instant *before* the
 *   query when the query lies in the second copy of a repeated hour; we then walk
 *   croner's own sequence forward from that instant until it passes the query (at most
 *   one repeated hour of fires). `between` chains `next` rather than croner's
 *   `nextRuns`, which repeats instants after a spring-forward gap.
 * - `every`: fires on the lattice anchor + k·every (any integer k), in real time, so
 *   DST does not affect it.
 */
import { createRequire } from 'node:module';
import type { Cron, CronPattern } from 'croner';
import { ConfigError, ValidationError } from '../errors.js';

/** How often a schedule fires: a cron expression (5 fields, or 6 with seconds first) in a time zone, or a fixed interval. */
export interface Cadence {
  /** A croner pattern: 5 fields, or 6 with seconds first. Exclusive with `every`. */
  cron?: string;
  /** A fixed interval in milliseconds, an integer >= 1000. Exclusive with `cron`. */
  every?: number;
  /** IANA time zone the cron fields are read in. @defaultValue 'UTC' */
  timezone?: string;
}

/** A validated cadence. */
export interface ParsedCadence {
  readonly cron: string | null;
  readonly every: number | null;
  readonly timezone: string;
  /**
   * The first fire time strictly after `after`, or null when there is none (e.g. a
   * cron that can never fire again, such as `0 0 30 2 *`). For `every`: anchored at
   * `anchor` (ms epoch, default 0): the smallest anchor + k*every greater than `after`.
   *
   * @throws ValidationError when `after` is not a valid Date
   */
  next(after: Date): Date | null;
  /**
   * Fire times in (from, to], in order, at most `limit`.
   *
   * @param limit - maximum number of instants returned, >= 0 @defaultValue 1000
   * @throws ValidationError when `from` or `to` is not a valid Date
   */
  between(from: Date, to: Date, limit?: number): Date[];
  /** e.g. "cron 0 9 * * 1-5 in America/New_York" or "every 5 s" */
  describe(): string;
}

/**
 * croner, loaded synchronously on the first cron pattern: a worker without cron
 * schedules does not pay its import (~10 ms; docs/benchmarks.md, "Start-up").
 */
function croner(): typeof import('croner') {
  return (cronerModule ??= createRequire(import.meta.url)('croner') as typeof import('croner'));
}
let cronerModule: typeof import('croner') | undefined;

/** Croner's options for every pattern. */
const CRONER_OPTIONS = { mode: '5-or-6-parts', domAndDow: false, sloppyRanges: true } as const;

/** Field names and ranges of a 5-field pattern; a 6-field one has `second` first. */
const FIELDS: ReadonlyArray<{ name: string; min: number; max: number }> = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12 },
  { name: 'day of week', min: 0, max: 7 },
];
const SECOND_FIELD = { name: 'second', min: 0, max: 59 };

/** Days in each month (index 0 = January) in the longest year: February has 29. */
const MONTH_DAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Upper bound on croner steps taken to get past a query that croner answered with an earlier instant. */
const MAX_CATCH_UP_STEPS = 100_000;

/**
 * Validates a cadence and returns its fire-time calculator.
 *
 * @param cadence - exactly one of `cron` and `every`, and an optional `timezone`
 * @param options.anchor - ms epoch the `every` lattice is anchored at @defaultValue 0
 * @throws ConfigError naming the problem: both or neither of cron/every; an invalid
 *   cron (with croner's message); an unknown time zone (checked with
 *   Intl.DateTimeFormat); `every` below 1000 ms, above 2^31 - 1 ms or not an integer; a non-finite anchor
 */
export function parseCadence(cadence: Cadence, options: { anchor?: number } = {}): ParsedCadence {
  const hasCron = cadence.cron !== undefined && cadence.cron !== null;
  const hasEvery = cadence.every !== undefined && cadence.every !== null;
  if (hasCron && hasEvery) throw new ConfigError('a cadence takes exactly one of "cron" and "every", not both');
  if (!hasCron && !hasEvery) throw new ConfigError('a cadence needs exactly one of "cron" or "every"; neither was given');

  const timezone = cadence.timezone ?? 'UTC';
  checkTimezone(timezone);

  if (hasEvery) {
    const anchor = options.anchor ?? 0;
    if (!Number.isFinite(anchor)) throw new ConfigError(`"anchor" must be a finite ms epoch, got ${String(anchor)}`);
    return everyCadence(checkEvery(cadence.every), anchor, timezone);
  }
  return cronCadence(cadence.cron as unknown, timezone);
}

function checkTimezone(timezone: unknown): asserts timezone is string {
  if (typeof timezone !== 'string' || timezone.trim() === '') {
    throw new ConfigError(`"timezone" must be an IANA time zone name such as "Europe/Berlin", got ${JSON.stringify(timezone)}`);
  }
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
  } catch {
    throw new ConfigError(`unknown time zone "${timezone}": expected an IANA name such as "Europe/Berlin" or "UTC"`);
  }
}

/** The longest `every`: 2^31 - 1 ms, Node's timer limit and the CLI's `--every` bound. */
const MAX_EVERY_MS = 2_147_483_647;

function checkEvery(every: unknown): number {
  if (typeof every !== 'number' || !Number.isInteger(every)) {
    throw new ConfigError(`"every" must be an integer number of milliseconds, got ${JSON.stringify(every) ?? String(every)}`);
  }
  if (every < 1000) throw new ConfigError(`"every" must be at least 1000 ms, got ${every} ms`);
  if (every > MAX_EVERY_MS) throw new ConfigError(`"every" must be at most ${MAX_EVERY_MS} ms (2^31 - 1, about 24.8 days; use a cron for rarer runs), got ${every} ms`);
  return every;
}

function checkDate(value: Date, name: string): number {
  const ms = value instanceof Date ? value.getTime() : Number.NaN;
  if (!Number.isFinite(ms)) throw new ValidationError(`"${name}" must be a valid Date`);
  return ms;
}

function everyCadence(every: number, anchor: number, timezone: string): ParsedCadence {
  const nextMs = (after: number): number => anchor + (Math.floor((after - anchor) / every) + 1) * every;
  return {
    cron: null,
    every,
    timezone,
    next(after) {
      return new Date(nextMs(checkDate(after, 'after')));
    },
    between(from, to, limit = 1000) {
      const end = checkDate(to, 'to');
      const out: Date[] = [];
      for (let t = nextMs(checkDate(from, 'from')); t <= end && out.length < limit; t += every) out.push(new Date(t));
      return out;
    },
    describe() {
      return every % 1000 === 0 ? `every ${every / 1000} s` : `every ${every} ms`;
    },
  };
}

function cronCadence(cron: unknown, timezone: string): ParsedCadence {
  if (typeof cron !== 'string' || cron.trim() === '') {
    throw new ConfigError(`"cron" must be a non-empty cron expression, got ${JSON.stringify(cron)}`);
  }
  checkFields(cron);
  let job: Cron;
  let pattern: CronPattern;
  try {
    job = new (croner().Cron)(cron, { timezone, ...CRONER_OPTIONS, paused: true });
    pattern = new (croner().CronPattern)(cron, timezone, CRONER_OPTIONS);
  } catch (error) {
    throw new ConfigError(`invalid cron "${cron}": ${error instanceof Error ? error.message : String(error)}`);
  }
  if (neverFires(pattern)) return cronCadenceNever(cron, timezone);
  try {
    job.nextRun(new Date(0)); // croner checks the time zone only when computing
  } catch (error) {
    if (error instanceof RangeError && /call stack/i.test(error.message)) {
      throw new ConfigError(`cron "${cron}": croner cannot compute its fire times (it ran out of stack)`);
    }
    throw new ConfigError(`invalid cron "${cron}": ${error instanceof Error ? error.message : String(error)}`);
  }

  const nextMs = (after: number): number | null => {
    let fire = job.nextRun(new Date(after));
    // Croner answers a query inside the second copy of a repeated hour with an
    // earlier instant; its own sequence from there gets past the query.
    for (let step = 0; fire !== null && fire.getTime() <= after; step++) {
      if (step >= MAX_CATCH_UP_STEPS) return null;
      fire = job.nextRun(fire);
    }
    return fire === null ? null : fire.getTime();
  };

  return {
    cron,
    every: null,
    timezone,
    next(after) {
      const t = nextMs(checkDate(after, 'after'));
      return t === null ? null : new Date(t);
    },
    between(from, to, limit = 1000) {
      const end = checkDate(to, 'to');
      const out: Date[] = [];
      for (let t = nextMs(checkDate(from, 'from')); t !== null && t <= end && out.length < limit; t = nextMs(t)) {
        out.push(new Date(t));
      }
      return out;
    },
    describe() {
      return `cron ${cron} in ${timezone}`;
    },
  };
}

/**
 * Checks each field on its own (croner's messages do not all say which field is
 * wrong): a step's start, then croner's parse of a pattern with only that field set.
 * Patterns that are not 5 or 6 fields (nicknames, a wrong count) are left to croner.
 *
 * @throws ConfigError `invalid cron "…": <field> field "<text>": <problem>`
 */
function checkFields(cron: string): void {
  const parts = cron.trim().split(/\s+/);
  if (parts.length !== 5 && parts.length !== 6) return;
  const fields = parts.length === 6 ? [SECOND_FIELD, ...FIELDS] : FIELDS;
  const refuse = (i: number, problem: string) => {
    throw new ConfigError(`invalid cron "${cron}": ${fields[i]!.name} field "${parts[i]}": ${problem}`);
  };
  parts.forEach((part, i) => {
    const { min, max } = fields[i]!;
    for (const element of part.split(',')) {
      const slash = element.indexOf('/');
      if (slash < 0) continue;
      const start = element.slice(0, slash);
      if (start === '') refuse(i, `a step needs a start, as in "*${element}", "${min}${element}" or "${min}-${max}${element}"`);
      if (/^\d+$/.test(start) && (Number(start) < min || Number(start) > max)) refuse(i, `the step starts at ${start}, outside ${min}-${max}`);
    }
    try {
      new (croner().CronPattern)(parts.map((p, j) => (j === i ? p : '*')).join(' '), 'UTC', CRONER_OPTIONS);
    } catch (error) {
      refuse(i, error instanceof Error ? error.message : String(error));
    }
  });
}

/**
 * True when no listed day of month exists in any listed month and the day of week
 * does not widen the choice (it is `*`, or ANDed with `+`): e.g. `0 0 30 2 *`.
 * `L` and `LW` always fire; `15W` counts as day 15.
 */
function neverFires(pattern: CronPattern): boolean {
  if (pattern.lastDayOfMonth || pattern.lastWeekday) return false;
  if (!pattern.starDOW && !pattern.useAndLogic) return false;
  const days = pattern.day.flatMap((on, i) => (on || pattern.nearestWeekdays[i] ? [i + 1] : []));
  return !pattern.month.some((on, m) => on && days.some((d) => d <= MONTH_DAYS[m]!));
}

/** A cron that parses but never fires: `next` is always null. */
function cronCadenceNever(cron: string, timezone: string): ParsedCadence {
  return {
    cron,
    every: null,
    timezone,
    next(after) {
      checkDate(after, 'after');
      return null;
    },
    between(from, to) {
      checkDate(from, 'from');
      checkDate(to, 'to');
      return [];
    },
    describe() {
      return `cron ${cron} in ${timezone}`;
    },
  };
}
