import { describe, expect, it } from 'vitest';
import { ConfigError, ValidationError } from '../../src/errors.js';
import { parseCadence, type ParsedCadence } from '../../src/schedule/cron.js';
import { defineSchedule } from '../../src/schedule/schedule.js';

/**
 * Cadence arithmetic (src/schedule/cron.ts), pure: no database. Every expectation is
 * an exact instant (ISO, UTC). Where croner's behaviour differs from the expectation
 * in ../shared/cases.md, the test asserts croner's behaviour and says so.
 */

const iso = (d: Date | null) => (d === null ? null : d.toISOString());
const isos = (ds: Date[]) => ds.map((d) => d.toISOString());
const at = (s: string) => new Date(s);

/** `count` successive fires after `after`, by chaining next(). */
function chain(c: ParsedCadence, after: string, count: number): (string | null)[] {
  const out: (string | null)[] = [];
  let t: Date | null = at(after);
  for (let i = 0; i < count && t !== null; i++) {
    t = c.next(t);
    out.push(iso(t));
  }
  return out;
}

const cron = (expr: string, timezone?: string) => parseCadence(timezone ? { cron: expr, timezone } : { cron: expr });

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('expected a ConfigError, nothing was thrown');
}

describe('issue 5: time zones and DST', () => {
  describe('30 2 * * * in Europe/Berlin', () => {
    const c = cron('30 2 * * *', 'Europe/Berlin');

    it('spring 2026-03-29 (02:00 CET -> 03:00 CEST at 01:00Z): 02:30 does not exist; croner shifts it by the gap to 03:30 CEST, once', () => {
      expect(isos(c.between(at('2026-03-27T00:00Z'), at('2026-03-31T00:00Z')))).toEqual([
        '2026-03-27T01:30:00.000Z', // 02:30 CET
        '2026-03-28T01:30:00.000Z', // 02:30 CET
        '2026-03-29T01:30:00.000Z', // 03:30 CEST: the missing 02:30 shifted by the one-hour gap
        '2026-03-30T00:30:00.000Z', // 02:30 CEST
      ]);
      // The same by chaining next() from the previous fire, as the scheduler does.
      expect(chain(c, '2026-03-28T01:30:00Z', 2)).toEqual(['2026-03-29T01:30:00.000Z', '2026-03-30T00:30:00.000Z']);
    });

    it('spring: a query made after the gap began skips that day (croner documents gap times as skipped)', () => {
      expect(iso(c.next(at('2026-03-29T00:59:59Z')))).toBe('2026-03-29T01:30:00.000Z');
      expect(iso(c.next(at('2026-03-29T01:00:00Z')))).toBe('2026-03-30T00:30:00.000Z');
      expect(iso(c.next(at('2026-03-29T01:15:00Z')))).toBe('2026-03-30T00:30:00.000Z');
    });

    it('fall 2026-10-25 (03:00 CEST -> 02:00 CET at 01:00Z): 02:30 exists twice and fires once, at its first occurrence', () => {
      expect(isos(c.between(at('2026-10-23T00:00Z'), at('2026-10-27T00:00Z')))).toEqual([
        '2026-10-23T00:30:00.000Z', // 02:30 CEST
        '2026-10-24T00:30:00.000Z',
        '2026-10-25T00:30:00.000Z', // 02:30 CEST, first occurrence; 01:30Z (02:30 CET) must not fire
        '2026-10-26T01:30:00.000Z', // 02:30 CET
      ]);
    });

    it('fall: a query inside the second copy of the hour gets the next day, never the past fire nor a second fire', () => {
      for (const q of ['2026-10-25T00:30:00Z', '2026-10-25T00:45:00Z', '2026-10-25T01:00:00Z', '2026-10-25T01:15:00Z', '2026-10-25T01:30:00Z']) {
        expect(iso(c.next(at(q))), q).toBe('2026-10-26T01:30:00.000Z');
      }
    });
  });

  it('0 9 * * 1-5 in America/New_York across 2026-03-08: 14:00Z (EST) before, 13:00Z (EDT) after, no weekend fire', () => {
    expect(isos(cron('0 9 * * 1-5', 'America/New_York').between(at('2026-03-05T00:00Z'), at('2026-03-11T23:59Z')))).toEqual([
      '2026-03-05T14:00:00.000Z', // Thu
      '2026-03-06T14:00:00.000Z', // Fri
      '2026-03-09T13:00:00.000Z', // Mon, first weekday in EDT
      '2026-03-10T13:00:00.000Z',
      '2026-03-11T13:00:00.000Z',
    ]);
  });

  it('0 0 29 2 * from 2026-03-01: next is 2028-02-29, then 2032-02-29', () => {
    expect(chain(cron('0 0 29 2 *'), '2026-03-01T00:00:00Z', 2)).toEqual(['2028-02-29T00:00:00.000Z', '2032-02-29T00:00:00.000Z']);
  });

  it('a cron that can never fire: next is null, between is empty', () => {
    const c = cron('0 0 30 2 *');
    expect(c.next(at('2026-01-01T00:00Z'))).toBeNull();
    expect(c.between(at('2026-01-01T00:00Z'), at('2030-01-01T00:00Z'))).toEqual([]);
  });

  it('an invalid cron is refused at definition with croner\'s message', () => {
    expect(configError(() => cron('61 * * * *')).message).toBe('invalid cron "61 * * * *": minute field "61": CronPattern: Invalid value for minute: 61');
    expect(configError(() => cron('* * * *')).message).toMatch(/^invalid cron "\* \* \* \*": .*exactly five, six, or seven space separated parts/);
    expect(configError(() => cron('0 0 0 1 1 * 2030')).message).toMatch(/^invalid cron "0 0 0 1 1 \* 2030": .*requires exactly 5 or 6 parts/);
    expect(configError(() => cron('')).message).toMatch(/"cron" must be a non-empty cron expression/);
    expect(configError(() => cron('not a cron')).code).toBe('config');
  });

  it('an invalid field is refused naming the field: steps of 0 or above the range, a step without a start, a start outside the range', () => {
    expect(configError(() => cron('*/0 * * * *')).message).toBe('invalid cron "*/0 * * * *": minute field "*/0": CronPattern: Syntax error, illegal stepping: 0');
    expect(configError(() => cron('*/61 * * * *')).message).toMatch(/^invalid cron "\*\/61 \* \* \* \*": minute field "\*\/61": .*steps cannot be greater/);
    expect(configError(() => cron('0 */25 * * *')).message).toMatch(/: hour field "\*\/25": /);
    expect(configError(() => cron('0 0 1-5/0 * *')).message).toMatch(/: day of month field "1-5\/0": .*illegal stepping/);
    expect(configError(() => cron('0 0 * 13 *')).message).toMatch(/: month field "13": /);
    expect(configError(() => cron('0 0 * * 8')).message).toMatch(/: day of week field "8": /);
    expect(configError(() => cron('*/0 * * * * *')).message).toMatch(/: second field "\*\/0": /);
    expect(configError(() => cron('0 */0 * * * *')).message).toMatch(/: minute field "\*\/0": /);
    expect(configError(() => cron('/10 * * * *')).message).toBe('invalid cron "/10 * * * *": minute field "/10": a step needs a start, as in "*/10", "0/10" or "0-59/10"');
    expect(configError(() => cron('70/5 * * * *')).message).toBe('invalid cron "70/5 * * * *": minute field "70/5": the step starts at 70, outside 0-59');
    expect(configError(() => cron('0 0 0/5 * *')).message).toMatch(/: day of month field "0\/5": the step starts at 0, outside 1-31/);
  });

  it('numeric-prefix steps (cronie\'s A/N = A through the maximum every N) are accepted', () => {
    expect(chain(cron('5/20 * * * *'), '2026-01-01T00:00:00Z', 4)).toEqual([
      '2026-01-01T00:05:00.000Z',
      '2026-01-01T00:25:00.000Z',
      '2026-01-01T00:45:00.000Z',
      '2026-01-01T01:05:00.000Z',
    ]);
    expect(chain(cron('0/59 * * * *'), '2026-01-01T00:00:00Z', 3)).toEqual(['2026-01-01T00:59:00.000Z', '2026-01-01T01:00:00.000Z', '2026-01-01T01:59:00.000Z']);
    expect(chain(cron('0 3/5 * * *'), '2026-01-01T00:00:00Z', 6)).toEqual([
      '2026-01-01T03:00:00.000Z',
      '2026-01-01T08:00:00.000Z',
      '2026-01-01T13:00:00.000Z',
      '2026-01-01T18:00:00.000Z',
      '2026-01-01T23:00:00.000Z',
      '2026-01-02T03:00:00.000Z',
    ]);
    expect(chain(cron('10/15 * * * * *'), '2026-01-01T00:00:00Z', 5)).toEqual([
      '2026-01-01T00:00:10.000Z',
      '2026-01-01T00:00:25.000Z',
      '2026-01-01T00:00:40.000Z',
      '2026-01-01T00:00:55.000Z',
      '2026-01-01T00:01:10.000Z',
    ]);
    // Croner's day-of-week maximum is 6: 1/2 is Mon, Wed, Fri (2026-01-05 is a Monday).
    expect(chain(cron('0 0 * * 1/2'), '2026-01-04T00:00:00Z', 4)).toEqual([
      '2026-01-05T00:00:00.000Z',
      '2026-01-07T00:00:00.000Z',
      '2026-01-09T00:00:00.000Z',
      '2026-01-12T00:00:00.000Z',
    ]);
  });

  it('a cron whose listed days exist in none of its listed months never fires: next null, not a stack overflow', () => {
    for (const expr of ['0 0 31 2,4,6,9,11 *', '0 0 30,31 2 *', '0 0 31 4 *', '0 0 31 2 +1-5', '0 0 31W 2 *', '0 0 30/10 2 *']) {
      const c = cron(expr);
      expect(c.next(at('2026-01-01T00:00Z')), expr).toBeNull();
      expect(c.between(at('2026-01-01T00:00Z'), at('2030-01-01T00:00Z')), expr).toEqual([]);
    }
    // Still firing: a day that exists in one listed month, February 29, L, a day of week ORed in.
    expect(iso(cron('0 0 31 2,4,5 *').next(at('2026-01-01T00:00Z')))).toBe('2026-05-31T00:00:00.000Z');
    expect(iso(cron('0 0 29 2 *').next(at('2026-01-01T00:00Z')))).toBe('2028-02-29T00:00:00.000Z');
    expect(iso(cron('0 0 L 2 *').next(at('2026-01-01T00:00Z')))).toBe('2026-02-28T00:00:00.000Z');
    expect(iso(cron('0 0 31 2 1-5').next(at('2026-01-01T00:00Z')))).toBe('2026-02-02T00:00:00.000Z');
    // A schedule refuses it as "never fires", like 0 0 30 2 *.
    for (const expr of ['0 0 31 2,4,6,9,11 *', '0 0 30 2 *']) {
      expect(configError(() => defineSchedule('never', { cron: expr, task: 'noop' })).message).toBe(`schedule "never": cron ${expr} in UTC never fires (no such date ahead)`);
    }
  });

  it('an unknown time zone is refused at definition', () => {
    expect(configError(() => cron('0 9 * * *', 'Mars/Olympus_Mons')).message).toBe(
      'unknown time zone "Mars/Olympus_Mons": expected an IANA name such as "Europe/Berlin" or "UTC"',
    );
    expect(configError(() => parseCadence({ every: 5000, timezone: 'Nowhere/Land' })).message).toMatch(/^unknown time zone "Nowhere\/Land"/);
    expect(configError(() => parseCadence({ cron: '0 9 * * *', timezone: '' })).message).toMatch(/"timezone" must be an IANA time zone name/);
  });
});

describe('C28: day of month + day of week', () => {
  const list = (expr: string, after: string, n: number) => chain(cron(expr), after, n);

  it('0 5 2-8 * 4 is OR (days 2-8 OR Thursdays), not "the second Thursday"', () => {
    expect(list('0 5 2-8 * 4', '2021-01-09T17:48:39Z', 12)).toEqual(
      ['01-14', '01-21', '01-28', '02-02', '02-03', '02-04', '02-05', '02-06', '02-07', '02-08', '02-11', '02-18'].map((d) => `2021-${d}T05:00:00.000Z`),
    );
  });

  it('30 4 1,15 * 5 fires on the 1st, the 15th and every Friday', () => {
    expect(list('30 4 1,15 * 5', '2024-03-01T00:00:00Z', 10)).toEqual(
      ['03-01', '03-08', '03-15', '03-22', '03-29', '04-01', '04-05', '04-12', '04-15', '04-19'].map((d) => `2024-${d}T04:30:00.000Z`),
    );
  });

  it('0 0 */3 * 1-5: deliberate pure OR (croner; cases.md\'s Vixie AND list would be 04-04, 04-10, 04-16 …)', () => {
    // Days 1, 4, 7, 10, 13 … OR Monday-Friday: 04-07 (Sun) and 04-13 (Sat) are days of the */3 list.
    expect(list('0 0 */3 * 1-5', '2024-04-03T12:00:00Z', 10)).toEqual(
      ['04-04', '04-05', '04-07', '04-08', '04-09', '04-10', '04-11', '04-12', '04-13', '04-15'].map((d) => `2024-${d}T00:00:00.000Z`),
    );
  });

  it('AND is available with croner\'s "+" on the day of week: 0 5 2-8 * +4 is the second Thursday', () => {
    expect(list('0 5 2-8 * +4', '2021-01-09T17:48:39Z', 3)).toEqual(['2021-02-04T05:00:00.000Z', '2021-03-04T05:00:00.000Z', '2021-04-08T05:00:00.000Z']);
  });

  it('controls: 0 0 * * 1 fires only on Mondays, 0 0 1 * * only on the 1st', () => {
    const mondays = cron('0 0 * * 1').between(at('2024-01-01T00:00Z'), at('2024-12-31T00:00Z'));
    expect(mondays).toHaveLength(52);
    expect(mondays.every((d) => d.getUTCDay() === 1 && d.getUTCHours() === 0 && d.getUTCMinutes() === 0)).toBe(true);
    expect(isos(mondays.slice(0, 3))).toEqual(['2024-01-08T00:00:00.000Z', '2024-01-15T00:00:00.000Z', '2024-01-22T00:00:00.000Z']);

    const firsts = cron('0 0 1 * *').between(at('2023-12-31T23:59Z'), at('2024-12-31T23:59Z'));
    expect(isos(firsts)).toEqual(Array.from({ length: 12 }, (_, m) => `2024-${String(m + 1).padStart(2, '0')}-01T00:00:00.000Z`));
  });
});

describe('C32: DST gap and repeated hour', () => {
  const ny = (expr: string) => cron(expr, 'America/New_York');

  it('30 2 * * * NY across the 2025-03-09 gap: exactly one fire that day; croner gives 07:30Z (03:30 EDT, shift by the gap), not cronie\'s 07:00Z', () => {
    const c = ny('30 2 * * *');
    expect(chain(c, '2025-03-08T05:00:00Z', 3)).toEqual([
      '2025-03-08T07:30:00.000Z', // 02:30 EST
      '2025-03-09T07:30:00.000Z', // 03:30 EDT (cases.md, cronie policy: 07:00Z)
      '2025-03-10T06:30:00.000Z', // 02:30 EDT
    ]);
    const onGapDay = c.between(at('2025-03-09T05:00Z'), at('2025-03-10T04:59Z'));
    expect(isos(onGapDay)).toEqual(['2025-03-09T07:30:00.000Z']);
  });

  it('30 1 * * * NY across the 2025-11-02 repeat: 05:30Z (01:30 EDT) only; 06:30Z (01:30 EST) does not fire', () => {
    const c = ny('30 1 * * *');
    expect(chain(c, '2025-11-01T04:00:00Z', 3)).toEqual(['2025-11-01T05:30:00.000Z', '2025-11-02T05:30:00.000Z', '2025-11-03T06:30:00.000Z']);
    expect(isos(c.between(at('2025-11-02T04:00Z'), at('2025-11-03T04:00Z')))).toEqual(['2025-11-02T05:30:00.000Z']);
  });

  it('0 1 * * * Los Angeles after 2024-11-03T08:15Z (01:15 PDT): 2024-11-04T09:00Z, not 11-03T09:00Z (01:00 PST, the repeat), never a time before the query', () => {
    const c = cron('0 1 * * *', 'America/Los_Angeles');
    expect(iso(c.next(at('2024-11-03T08:15:00Z')))).toBe('2024-11-04T09:00:00.000Z');
    // Queries inside the second copy (01:xx PST) must not fire 01:00 again.
    for (const q of ['2024-11-03T09:00:00Z', '2024-11-03T09:15:00Z', '2024-11-03T09:59:59Z']) {
      expect(iso(c.next(at(q))), q).toBe('2024-11-04T09:00:00.000Z');
    }
  });

  it('next is strictly after its query and never goes backwards, for queries all through the NY repeated hour', () => {
    // croner 10 alone answers some of these queries with an instant before the query.
    for (const expr of ['30 1 * * *', '*/30 * * * *', '* * * * *', '*/10 * * * * *']) {
      const c = ny(expr);
      let previous = 0;
      for (let q = Date.parse('2025-11-02T04:50:00Z'); q <= Date.parse('2025-11-02T07:10:00Z'); q += 5 * 60_000 + 7_000) {
        const n = c.next(new Date(q))!.getTime();
        expect(n, `${expr} after ${new Date(q).toISOString()}`).toBeGreaterThan(q);
        expect(n).toBeGreaterThanOrEqual(previous);
        previous = n;
      }
    }
  });

  it('*/30 * * * * NY over 2025-11-02 04:00Z..08:00Z inclusive: croner fires 7 times (only the first 01:00 and 01:30), cases.md expects 9', () => {
    expect(isos(ny('*/30 * * * *').between(at('2025-11-02T03:59:59.999Z'), at('2025-11-02T08:00:00Z')))).toEqual([
      '2025-11-02T04:00:00.000Z', // 00:00 EDT
      '2025-11-02T04:30:00.000Z',
      '2025-11-02T05:00:00.000Z', // 01:00 EDT
      '2025-11-02T05:30:00.000Z', // 01:30 EDT
      // 06:00Z and 06:30Z (01:00 and 01:30 EST) do not fire under croner's "overlap runs once" rule
      '2025-11-02T07:00:00.000Z', // 02:00 EST
      '2025-11-02T07:30:00.000Z',
      '2025-11-02T08:00:00.000Z',
    ]);
  });

  it('0 8 * * 1 Europe/Amsterdam after 2017-10-16T09:00+02:00: 10-23T06:00Z, 10-30T07:00Z, 11-06T07:00Z (none at 10-30T06:00Z)', () => {
    expect(chain(cron('0 8 * * 1', 'Europe/Amsterdam'), '2017-10-16T09:00:00+02:00', 3)).toEqual([
      '2017-10-23T06:00:00.000Z',
      '2017-10-30T07:00:00.000Z',
      '2017-11-06T07:00:00.000Z',
    ]);
  });

  /** Fires in [from, to) (half-open, as cases.md states the windows). */
  const window = (c: ParsedCadence, from: string, to: string) => c.between(new Date(Date.parse(from) - 1), new Date(Date.parse(to) - 1), 10_000);

  function assertOnePerRealMinute(fires: Date[]) {
    const minutes = fires.map((d) => Math.floor(d.getTime() / 60_000));
    expect(new Set(minutes).size).toBe(fires.length);
    for (let i = 1; i < fires.length; i++) expect(fires[i]!.getTime()).toBeGreaterThan(fires[i - 1]!.getTime());
    expect(fires.every((d) => d.getTime() % 60_000 === 0)).toBe(true);
  }

  it('runaway check, spring: * * * * * NY over [2026-03-08T06:00Z, 08:00Z) gives exactly 120 fires, one per real minute', () => {
    // croner's own nextRuns() repeats 07:00Z..07:59Z here; chaining nextRun (as next/between do) does not.
    const fires = window(ny('* * * * *'), '2026-03-08T06:00:00Z', '2026-03-08T08:00:00Z');
    expect(fires).toHaveLength(120);
    assertOnePerRealMinute(fires);
    expect(iso(fires[0]!)).toBe('2026-03-08T06:00:00.000Z');
    expect(isos(fires.slice(59, 61))).toEqual(['2026-03-08T06:59:00.000Z', '2026-03-08T07:00:00.000Z']); // 01:59 EST, 03:00 EDT
    expect(iso(fires[119]!)).toBe('2026-03-08T07:59:00.000Z');
  });

  it('runaway check, fall: * * * * * NY over [2026-11-01T04:00Z, 08:00Z): croner gives 180 (skips the second copy of 01:xx), cases.md expects 240', () => {
    const fires = window(ny('* * * * *'), '2026-11-01T04:00:00Z', '2026-11-01T08:00:00Z');
    expect(fires).toHaveLength(180);
    assertOnePerRealMinute(fires);
    expect(isos(fires.slice(119, 121))).toEqual(['2026-11-01T05:59:00.000Z', '2026-11-01T07:00:00.000Z']); // 01:59 EDT, then 02:00 EST
    expect(iso(fires[179]!)).toBe('2026-11-01T07:59:00.000Z');
    expect(fires.some((d) => d >= at('2026-11-01T06:00Z') && d < at('2026-11-01T07:00Z'))).toBe(false);
  });
});

describe('seconds and fixed intervals', () => {
  it('*/15 * * * * * fires every 15 s', () => {
    expect(isos(cron('*/15 * * * * *').between(at('2026-01-01T00:00:00Z'), at('2026-01-01T00:01:15Z')))).toEqual([
      '2026-01-01T00:00:15.000Z',
      '2026-01-01T00:00:30.000Z',
      '2026-01-01T00:00:45.000Z',
      '2026-01-01T00:01:00.000Z',
      '2026-01-01T00:01:15.000Z',
    ]);
    expect(iso(cron('*/15 * * * * *').next(at('2026-01-01T00:00:14.999Z')))).toBe('2026-01-01T00:00:15.000Z');
    expect(iso(cron('*/15 * * * * *').next(at('2026-01-01T00:00:15.000Z')))).toBe('2026-01-01T00:00:30.000Z');
  });

  it('every: 1000 fires every second on the anchor\'s lattice, strictly after the query', () => {
    const anchor = Date.parse('2026-01-01T00:00:00.250Z');
    const c = parseCadence({ every: 1000 }, { anchor });
    expect(iso(c.next(at('2026-01-01T00:00:00.250Z')))).toBe('2026-01-01T00:00:01.250Z');
    expect(iso(c.next(at('2026-01-01T00:00:00.249Z')))).toBe('2026-01-01T00:00:00.250Z');
    expect(iso(c.next(at('2026-01-01T00:00:05.999Z')))).toBe('2026-01-01T00:00:06.250Z');
    expect(isos(c.between(at('2026-01-01T00:00:00Z'), at('2026-01-01T00:00:03.250Z')))).toEqual([
      '2026-01-01T00:00:00.250Z',
      '2026-01-01T00:00:01.250Z',
      '2026-01-01T00:00:02.250Z',
      '2026-01-01T00:00:03.250Z',
    ]);
    // Default anchor 0: whole seconds; real time, so DST does not matter.
    const plain = parseCadence({ every: 5000, timezone: 'America/New_York' });
    expect(iso(plain.next(at('2026-11-01T06:00:02Z')))).toBe('2026-11-01T06:00:05.000Z');
    expect(plain.between(at('2026-11-01T05:00:00Z'), at('2026-11-01T07:00:00Z'), 10_000)).toHaveLength(1440);
  });

  it('between honours limit and an empty or reversed range', () => {
    const c = cron('* * * * *');
    expect(isos(c.between(at('2026-01-01T00:00Z'), at('2026-01-02T00:00Z'), 2))).toEqual(['2026-01-01T00:01:00.000Z', '2026-01-01T00:02:00.000Z']);
    expect(c.between(at('2026-01-01T00:00Z'), at('2026-12-01T00:00Z'))).toHaveLength(1000);
    expect(c.between(at('2026-01-01T00:00Z'), at('2026-01-01T00:00:59Z'))).toEqual([]);
    expect(c.between(at('2026-01-02T00:00Z'), at('2026-01-01T00:00Z'))).toEqual([]);
    expect(parseCadence({ every: 1000 }).between(at('2026-01-01T00:00Z'), at('2026-01-01T00:00:10Z'), 0)).toEqual([]);
  });

  it('every below 1000 ms, fractional or not a number: ConfigError', () => {
    expect(configError(() => parseCadence({ every: 999 })).message).toBe('"every" must be at least 1000 ms, got 999 ms');
    expect(configError(() => parseCadence({ every: 0 })).message).toMatch(/at least 1000 ms/);
    expect(configError(() => parseCadence({ every: -5000 })).message).toMatch(/at least 1000 ms/);
    expect(configError(() => parseCadence({ every: 1500.5 })).message).toBe('"every" must be an integer number of milliseconds, got 1500.5');
    expect(configError(() => parseCadence({ every: Number.NaN })).message).toMatch(/integer number of milliseconds/);
    expect(configError(() => parseCadence({ every: '5000' as unknown as number })).message).toMatch(/integer number of milliseconds, got "5000"/);
    expect(configError(() => parseCadence({ every: 1000 }, { anchor: Number.NaN })).message).toMatch(/"anchor" must be a finite ms epoch/);
  });

  it('both cron and every, or neither: ConfigError', () => {
    expect(configError(() => parseCadence({ cron: '* * * * *', every: 5000 })).message).toBe('a cadence takes exactly one of "cron" and "every", not both');
    expect(configError(() => parseCadence({})).message).toBe('a cadence needs exactly one of "cron" or "every"; neither was given');
    expect(configError(() => parseCadence({ timezone: 'Europe/Berlin' })).message).toMatch(/neither was given/);
  });

  it('an invalid Date passed to next or between: ValidationError', () => {
    expect(() => cron('* * * * *').next(new Date(Number.NaN))).toThrow(ValidationError);
    expect(() => parseCadence({ every: 1000 }).between(at('2026-01-01T00:00Z'), new Date(Number.NaN))).toThrow(ValidationError);
  });

  it('fields, time zone and describe()', () => {
    const c = cron('0 9 * * 1-5', 'America/New_York');
    expect([c.cron, c.every, c.timezone, c.describe()]).toEqual(['0 9 * * 1-5', null, 'America/New_York', 'cron 0 9 * * 1-5 in America/New_York']);
    const u = cron('*/15 * * * * *');
    expect([u.timezone, u.describe()]).toEqual(['UTC', 'cron */15 * * * * * in UTC']);
    const e = parseCadence({ every: 5000 });
    expect([e.cron, e.every, e.timezone, e.describe()]).toEqual([null, 5000, 'UTC', 'every 5 s']);
    expect(parseCadence({ every: 1500 }).describe()).toBe('every 1500 ms');
  });
});
