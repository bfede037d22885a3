/**
 * The soak report's timeline (issue 34, item 5): throughput over time from the ledger's
 * `run-end` and `run-start` events, with every nemesis fault drawn over it as a band in its
 * kind's colour, so a dip can be read against the fault that caused it. Drawn as a small
 * hand-written SVG ({@link timelineSvg}), turned into a PNG by headless chromium
 * ({@link renderPng}).
 *
 * Layout of the picture (px):
 * ```
 *  title                                   (the caller's, e.g. "soak postgres 30 min, seed 42")
 *  summary                                 (jobs finished, faults, peak rate, bucket width)
 *  jobs/s ┤ ░░ bands ░░ ▁▂▅▇█▇▅ finished   │ legend: the two series,
 *         ┤  ┊ signal   - - - started      │ then every fault kind with its count
 *         └──────────────────────────────  │
 *              seconds since the soak start
 * ```
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { launchChromium } from '../helpers/browser.js';
import type { EntryOf, FaultKind, LedgerEntry } from './ledger-events.js';
import { FAULT_KINDS, countByKind } from './nemesis-plan.js';

/** Which part of the ledger {@link throughputSeries} counts, and in what buckets. */
export interface SeriesOptions {
  /** Bucket width, ms. @defaultValue 1000 (so a count is jobs per second) */
  bucketMs?: number;
  /** The soak's start, ms since the epoch: bucket 0 starts here. @defaultValue the earliest entry's `at` (or fault's `startedAt`) */
  from?: number;
  /** The soak's end, ms since the epoch: the last bucket ends here. @defaultValue the latest entry's `at` (or fault's `endedAt`) */
  to?: number;
}

/**
 * Counts per bucket over [`from`, `to`]: bucket i counts events at [from + i·bucketMs,
 * from + (i+1)·bucketMs); the last bucket also counts an event at exactly `to`, and is
 * shorter than `bucketMs` when the range is not a whole number of buckets. Events outside
 * the range are not counted.
 */
export interface ThroughputSeries {
  /** Start of bucket 0, ms since the epoch. */
  from: number;
  /** End of the last bucket, ms since the epoch. */
  to: number;
  /** Bucket width, ms. */
  bucketMs: number;
  /** Jobs finished: `run-end` events with outcome `returned`, per bucket. */
  finished: number[];
  /** Runs started: `run-start` events (first runs, re-runs and continuations alike), per bucket. */
  started: number[];
}

/**
 * Counts jobs finished and runs started per bucket of `entries` (a ledger, in any order).
 * @returns one count per bucket, at least one bucket
 * @throws RangeError when `bucketMs` is not positive, `to` < `from`, or the range is unknown (no entries, no `from`/`to`)
 */
export function throughputSeries(entries: readonly LedgerEntry[], options: SeriesOptions = {}): ThroughputSeries {
  const bucketMs = options.bucketMs ?? 1000;
  let earliest = Infinity;
  let latest = -Infinity;
  // A loop, not Math.min(...): a soak's ledger has more entries than a call has room for arguments.
  for (const entry of entries) {
    earliest = Math.min(earliest, entry.at, entry.kind === 'fault' ? entry.startedAt : Infinity);
    latest = Math.max(latest, entry.at, entry.kind === 'fault' ? entry.endedAt : -Infinity);
  }
  const from = options.from ?? earliest;
  const to = options.to ?? latest;
  if (!(bucketMs > 0) || !Number.isFinite(from) || !Number.isFinite(to) || to < from) {
    throw new RangeError(`throughputSeries needs bucketMs > 0 and from <= to (got bucketMs ${bucketMs}, from ${from}, to ${to})`);
  }
  const buckets = Math.max(1, Math.ceil((to - from) / bucketMs));
  const finished = new Array<number>(buckets).fill(0);
  const started = new Array<number>(buckets).fill(0);
  const bucketOf = (at: number) => Math.min(buckets - 1, Math.floor((at - from) / bucketMs));
  for (const entry of entries) {
    if (entry.at < from || entry.at > to) continue;
    if (entry.kind === 'run-end' && entry.outcome === 'returned') finished[bucketOf(entry.at)]!++;
    if (entry.kind === 'run-start') started[bucketOf(entry.at)]!++;
  }
  return { from, to, bucketMs, finished, started };
}

/** Each fault kind's colour (Okabe-Ito, told apart with colour blindness too), as bands, lines and legend swatches show it. */
export const FAULT_COLOURS: Readonly<Record<FaultKind, string>> = {
  sigkill: '#d55e00',
  sigterm: '#e69f00',
  sigstop: '#0072b2',
  'net-cut': '#cc79a7',
  'db-restart': '#009e73',
  'cpu-hog': '#f0e442',
};

/** What {@link timelineSvg} draws, beyond the series' range and buckets. */
export interface TimelineOptions extends SeriesOptions {
  /** The title line, e.g. `soak postgres 30 min, seed 42`. @defaultValue 'soak timeline' */
  title?: string;
  /** The picture's width, px, an integer ≥ 400. @defaultValue 1200 */
  width?: number;
  /** The picture's height, px, an integer ≥ 300 (room for the legend). @defaultValue 500 */
  height?: number;
}

/** Margins around the plot, px: room for the title (top), tick labels (left, bottom) and the legend (right). */
const MARGIN = { top: 64, right: 180, bottom: 52, left: 64 };

/**
 * Draws the timeline of `entries` as a standalone SVG document of `width` × `height` px:
 * jobs finished per second as a filled step area, runs started per second as a dashed
 * step line, each `fault` entry as a band over its [startedAt, endedAt] (a 2 px line for a
 * signal, whose interval is one instant) in {@link FAULT_COLOURS}, clipped to the range; a
 * legend of the series and of every kind with its count (faults in the range); axes in
 * seconds since `from` and jobs/s. Each fault's mark is an element
 * `<rect|line class="fault" data-kind="<kind>" …>` holding a `<title>` with its kind,
 * target pid and interval in seconds.
 * @throws RangeError as {@link throughputSeries}, or when `width` or `height` is out of range
 */
export function timelineSvg(entries: readonly LedgerEntry[], options: TimelineOptions = {}): string {
  const { width = 1200, height = 500, title = 'soak timeline' } = options;
  if (!(Number.isInteger(width) && width >= 400 && Number.isInteger(height) && height >= 300)) {
    throw new RangeError(`timelineSvg needs an integer width >= 400 and height >= 300 px (got ${width} x ${height})`);
  }
  const series = throughputSeries(entries, options);
  const perSecond = 1000 / series.bucketMs;
  const spanMs = Math.max(series.to - series.from, 1);
  const plot = { left: MARGIN.left, right: width - MARGIN.right, top: MARGIN.top, bottom: height - MARGIN.bottom };
  const peak = series.finished.reduce((a, b) => Math.max(a, b), 0) * perSecond;
  const highest = Math.max(1, peak, series.started.reduce((a, b) => Math.max(a, b), 0) * perSecond);
  const yStep = niceStep(highest, 5);
  const yMax = Math.ceil(highest / yStep) * yStep;
  const x = (ms: number) => plot.left + ((Math.min(Math.max(ms, series.from), series.to) - series.from) / spanMs) * (plot.right - plot.left);
  const y = (rate: number) => plot.bottom - (rate / yMax) * (plot.bottom - plot.top);
  const seconds = (ms: number) => ((ms - series.from) / 1000).toFixed(1);

  const faults = entries.filter((e): e is EntryOf<'fault'> => e.kind === 'fault' && e.endedAt >= series.from && e.startedAt <= series.to);
  const marks = faults.map((f) => {
    const colour = FAULT_COLOURS[f.fault];
    const tip = `<title>${f.fault}${f.targetPid === null ? '' : ` pid ${f.targetPid}`}: ${seconds(f.startedAt)}–${seconds(f.endedAt)} s</title>`;
    if (f.startedAt === f.endedAt) {
      const at = px(x(f.startedAt));
      return `<line class="fault" data-kind="${f.fault}" stroke="${colour}" stroke-width="2" x1="${at}" x2="${at}" y1="${plot.top}" y2="${plot.bottom}">${tip}</line>`;
    }
    const left = x(f.startedAt);
    return `<rect class="fault" data-kind="${f.fault}" fill="${colour}" fill-opacity="0.35" x="${px(left)}" y="${plot.top}" width="${px(Math.max(1, x(f.endedAt) - left))}" height="${plot.bottom - plot.top}">${tip}</rect>`;
  });

  const steps = (counts: number[]) =>
    counts.map((count, i) => {
      const level = px(y(count * perSecond));
      return `L${px(x(series.from + i * series.bucketMs))},${level}L${px(x(series.from + (i + 1) * series.bucketMs))},${level}`;
    }).join('');
  const finishedPath = `M${plot.left},${plot.bottom}${steps(series.finished)}L${plot.right},${plot.bottom}Z`;
  const startedPath = `M${steps(series.started).slice(1)}`;

  const xStep = niceStep(spanMs / 1000, 10);
  const xTicks = range(0, spanMs / 1000, xStep).map((s) => tick(x(series.from + s * 1000), plot.bottom, formatTick(s, xStep), 'x'));
  const yTicks = range(0, yMax, yStep).map((r) => tick(y(r), plot.left, formatTick(r, yStep), 'y', plot.right));

  const counts = countByKind(faults.map((f) => ({ kind: f.fault })));
  const legendX = plot.right + 20;
  const legend = [
    `<rect x="${legendX}" y="${plot.top}" width="16" height="10" fill="#333" fill-opacity="0.25" stroke="#222"/><text x="${legendX + 24}" y="${plot.top + 10}">jobs finished/s</text>`,
    `<line x1="${legendX}" x2="${legendX + 16}" y1="${plot.top + 27}" y2="${plot.top + 27}" stroke="#555" stroke-width="1.5" stroke-dasharray="4 3"/><text x="${legendX + 24}" y="${plot.top + 32}">runs started/s</text>`,
    `<text x="${legendX}" y="${plot.top + 66}" font-weight="bold">faults</text>`,
    ...FAULT_KINDS.map((kind, i) => {
      const top = plot.top + 78 + i * 22;
      return `<rect x="${legendX}" y="${top}" width="16" height="12" fill="${FAULT_COLOURS[kind]}"/><text class="legend" data-kind="${kind}" x="${legendX + 24}" y="${top + 11}">${kind} (${counts[kind]})</text>`;
    }),
  ];

  const total = series.finished.reduce((a, b) => a + b, 0);
  const summary = `${total} jobs finished in ${(spanMs / 1000).toFixed(0)} s, peak ${Number(peak.toFixed(1))} jobs/s (${series.bucketMs} ms buckets); ${faults.length} faults`;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="DejaVu Sans, Liberation Sans, sans-serif" font-size="12" fill="#222">`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    `<text x="${plot.left}" y="24" font-size="18" font-weight="bold">${escapeXml(title)}</text>`,
    `<text x="${plot.left}" y="44" fill="#555">${escapeXml(summary)}</text>`,
    ...yTicks,
    ...marks,
    `<path d="${finishedPath}" fill="#333" fill-opacity="0.25" stroke="#222" stroke-width="1"/>`,
    `<path d="${startedPath}" fill="none" stroke="#555" stroke-width="1.5" stroke-dasharray="4 3"/>`,
    `<path d="M${plot.left},${plot.top}V${plot.bottom}H${plot.right}" fill="none" stroke="#222"/>`,
    ...xTicks,
    `<text x="${(plot.left + plot.right) / 2}" y="${height - 12}" text-anchor="middle">seconds since the soak start</text>`,
    `<text transform="translate(18 ${(plot.top + plot.bottom) / 2}) rotate(-90)" text-anchor="middle">jobs/s</text>`,
    ...legend,
    '</svg>',
  ].join('\n');
}

/**
 * Renders `svg` (a document as {@link timelineSvg} makes it) into a PNG file at `path`, at
 * the SVG's own size, 1 px per px: the PNG is `width` × `height`. Loads it into a headless
 * chromium of its own (test/helpers/browser.ts), screenshots the `<svg>` element, and closes
 * the browser whatever happens.
 * @param path - the PNG file to write; its directory is made when missing
 * @returns `path`, once the file is written
 * @throws when chromium cannot be launched (see `chromiumAvailable`), or `svg` has no `<svg>` element at its top
 */
export async function renderPng(svg: string, path: string): Promise<string> {
  mkdirSync(dirname(path), { recursive: true });
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ deviceScaleFactor: 1 });
    await page.setContent(`<!doctype html><html><head><style>body { margin: 0 } svg { display: block }</style></head><body>${svg}</body></html>`);
    const element = page.locator('body > svg');
    const box = await element.boundingBox();
    if (!box) throw new Error('renderPng: the document has no <svg> element at its top');
    await page.setViewportSize({ width: Math.ceil(box.width), height: Math.ceil(box.height) });
    await element.screenshot({ path });
    return path;
  } finally {
    await browser.close();
  }
}

/** A tick of the x axis (below the plot at `at`) or the y axis (left of it, with a grid line to `gridTo`). */
function tick(at: number, base: number, label: string, axis: 'x' | 'y', gridTo = base): string {
  const p = px(at);
  return axis === 'x'
    ? `<line x1="${p}" x2="${p}" y1="${base}" y2="${base + 5}" stroke="#222"/><text x="${p}" y="${base + 18}" text-anchor="middle">${label}</text>`
    : `<line x1="${base}" x2="${gridTo}" y1="${p}" y2="${p}" stroke="#e4e4e4"/><line x1="${base - 5}" x2="${base}" y1="${p}" y2="${p}" stroke="#222"/><text x="${base - 8}" y="${px(at + 4)}" text-anchor="end">${label}</text>`;
}

/** The tick step, 1, 2 or 5 × 10^k, that cuts [0, span] into at most about `most` parts. */
function niceStep(span: number, most: number): number {
  const raw = span / most;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * magnitude).find((step) => step >= raw)!;
}

/** 0, step, 2·step, … up to `end` (within rounding). */
function range(start: number, end: number, step: number): number[] {
  const values: number[] = [];
  for (let i = 0; start + i * step <= end + step * 1e-9; i++) values.push(start + i * step);
  return values;
}

/** A tick label with as many decimals as `step` needs. */
function formatTick(value: number, step: number): string {
  return value.toFixed(Math.max(0, -Math.floor(Math.log10(step))));
}

/** A coordinate rounded to 0.1 px. */
function px(value: number): string {
  return String(Math.round(value * 10) / 10);
}

/** `text` safe inside an SVG element or attribute. */
function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!);
}
