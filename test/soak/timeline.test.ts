/**
 * The soak's timeline of throughput against faults: jobs finished and runs started counted
 * per bucket exactly (bucket edges, the range, only `returned` run-ends as finished); one
 * mark per fault in its kind's colour, a line for a signal and a band for an interval, with
 * the legend counting each kind; and a PNG of the asked size from headless chromium.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { chromiumAvailable } from '../helpers/browser.js';
import { tempDir } from '../helpers/db.js';
import { SyntheticHistory } from './synthetic-history.js';
import { FAULT_COLOURS, renderPng, throughputSeries, timelineSvg } from './timeline.js';

/** The soak's start, ms since the epoch. */
const T0 = 1_760_000_000_000;

/**
 * Three seconds of soak from T0: jobs 1, 2, 3 and 7 return at +999, +1000, +1999 and +3000
 * ms (the latest entry); jobs 4, 5, 6 end otherwise (threw, suspended, aborted). Faults: two
 * SIGKILLs (+1200, +2900), a SIGSTOP over [+1500, +2600], a CPU hog over [+2000, +2800].
 */
function threeSeconds(): SyntheticHistory {
  const h = new SyntheticHistory();
  h.add(T0, 2, { kind: 'job-enqueued', jobId: 1, task: 'short', queue: 'default' });
  h.start(1, 1, 100, T0 + 10).end(1, 1, 100, T0 + 999, 'returned');
  h.start(2, 1, 100, T0 + 1000).end(2, 1, 100, T0 + 1000, 'returned');
  h.start(3, 1, 101, T0 + 1500).end(3, 1, 101, T0 + 1999, 'returned');
  h.start(4, 1, 101, T0 + 2000).end(4, 1, 101, T0 + 2100, 'threw');
  h.start(5, 1, 102, T0 + 2200).end(5, 1, 102, T0 + 2300, 'suspended');
  h.start(6, 1, 102, T0 + 2400).end(6, 1, 102, T0 + 2500, 'aborted', 'lease-lost');
  h.start(7, 1, 100, T0 + 2999).end(7, 1, 100, T0 + 3000, 'returned');
  h.fault('sigkill', 102, T0 + 1200).fault('sigstop', 101, T0 + 1500, T0 + 2600).fault('cpu-hog', null, T0 + 2000, T0 + 2800).fault('sigkill', 100, T0 + 2900);
  return h;
}

/** The fault marks of `svg`: [element, kind, colour, tooltip] each, in drawing order. */
function marks(svg: string): string[][] {
  return [...svg.matchAll(/<(rect|line) class="fault" data-kind="([a-z-]+)" (?:fill|stroke)="(#[0-9a-f]{6})"[^>]*><title>([^<]*)<\/title>/g)].map((m) => m.slice(1));
}

describe('the soak timeline', () => {
  it('counts returned run-ends and run-starts per second from the earliest to the latest entry', () => {
    const series = throughputSeries(threeSeconds().entries);
    expect(series).toEqual({ from: T0, to: T0 + 3000, bucketMs: 1000, finished: [1, 2, 1], started: [1, 2, 4] });
  });

  it('puts an event on a bucket edge in the bucket it opens, and counts nothing outside [from, to]', () => {
    const h = threeSeconds();
    expect(throughputSeries(h.entries, { to: T0 + 4000 }).finished).toEqual([1, 2, 0, 1]);
    expect(throughputSeries(h.entries, { from: T0 + 1000, to: T0 + 2000, bucketMs: 500 })).toMatchObject({ finished: [1, 1], started: [1, 2] });
    expect(throughputSeries(h.entries, { from: T0 + 1000, to: T0 + 2500, bucketMs: 1000 })).toMatchObject({ finished: [2, 0], started: [2, 3] });
  });

  it('refuses a range it cannot know or a bucket that is not positive', () => {
    expect(() => throughputSeries([])).toThrow(RangeError);
    expect(() => throughputSeries(threeSeconds().entries, { bucketMs: 0 })).toThrow(RangeError);
    expect(() => throughputSeries(threeSeconds().entries, { from: T0 + 10, to: T0 })).toThrow(RangeError);
  });

  it('draws one mark per fault in its kind colour, a line for a signal and a band for an interval, and counts kinds in the legend', () => {
    const svg = timelineSvg(threeSeconds().entries, { title: 'soak <sqlite> & seed 42' });
    expect(marks(svg)).toEqual([
      ['line', 'sigkill', FAULT_COLOURS.sigkill, 'sigkill pid 102: 1.2–1.2 s'],
      ['rect', 'sigstop', FAULT_COLOURS.sigstop, 'sigstop pid 101: 1.5–2.6 s'],
      ['rect', 'cpu-hog', FAULT_COLOURS['cpu-hog'], 'cpu-hog: 2.0–2.8 s'],
      ['line', 'sigkill', FAULT_COLOURS.sigkill, 'sigkill pid 100: 2.9–2.9 s'],
    ]);
    for (const [kind, count] of Object.entries({ sigkill: 2, sigterm: 0, sigstop: 1, 'net-cut': 0, 'db-restart': 0, 'cpu-hog': 1 })) {
      expect(svg).toContain(`>${kind} (${count})</text>`);
    }
    expect(svg).toContain('>soak &lt;sqlite&gt; &amp; seed 42</text>');
    expect(svg).toContain('>4 jobs finished in 3 s, peak 2 jobs/s (1000 ms buckets); 4 faults</text>');
    expect(svg).toContain('>seconds since the soak start</text>');
    expect(svg).toContain('>jobs/s</text>');
  });

  it('labels both axes with evenly stepped ticks, and keeps every text inside the picture', () => {
    const svg = timelineSvg(threeSeconds().entries, { width: 800, height: 300 });
    const texts = [...svg.matchAll(/<text[^>]*? x="(-?[\d.]+)" y="(-?[\d.]+)"([^>]*)>([^<]*)<\/text>/g)].map(([, x, y, attrs, text]) => ({ x: Number(x), y: Number(y), attrs: attrs!, text: text! }));
    for (const { x, y, text } of texts) expect({ text, inside: x >= 0 && x <= 800 && y >= 0 && y <= 300 }).toEqual({ text, inside: true });
    const ticks = (anchor: string) => texts.filter((t) => t.attrs.includes(`text-anchor="${anchor}"`) && /^[\d.]+$/.test(t.text));
    expect(ticks('end').map((t) => t.text)).toEqual(['0', '1', '2', '3', '4']);
    expect(ticks('middle').map((t) => t.text)).toEqual(['0.0', '0.5', '1.0', '1.5', '2.0', '2.5', '3.0']);
  });

  it('leaves out the faults outside the range, from the plot and from the legend', () => {
    const svg = timelineSvg(threeSeconds().entries, { from: T0, to: T0 + 1400 });
    expect(marks(svg).map(([, kind]) => kind)).toEqual(['sigkill']);
    expect(svg).toContain('>sigkill (1)</text>');
    expect(svg).toContain('>sigstop (0)</text>');
  });

  it.skipIf(!chromiumAvailable())('renders a PNG of the asked size (needs chromium: skipped without it)', async () => {
    const svg = timelineSvg(threeSeconds().entries, { title: 'soak sqlite 3 s, seed 42', width: 900, height: 420 });
    const path = join(tempDir(), 'timeline', 'soak.png');
    expect(await renderPng(svg, path)).toBe(path);
    const png = readFileSync(path);
    expect([...png.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    expect(png.toString('latin1', 12, 16)).toBe('IHDR');
    expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([900, 420]);
  });
});
