/**
 * `node --import tsx bench/plot-history.ts OUT.svg RESULTS.json [RESULTS.json…]`
 *
 * Draws the history workload's curves (bench/workloads/history.ts): each round's drain
 * rate as a share of round 1, one line per figure set found in the results files
 * (`npm run bench -- --only history` writes them to bench/results/), with the 90%
 * target as a dashed line. Plain SVG, no dependency.
 */
import { readFileSync, writeFileSync } from 'node:fs';

interface Series {
  label: string;
  ratios: number[];
}

const [out, ...files] = process.argv.slice(2);
if (!out || files.length === 0) {
  process.stderr.write('usage: bench/plot-history.ts OUT.svg RESULTS.json [RESULTS.json…]\n');
  process.exit(2);
}

const series: Series[] = [];
for (const file of files) {
  const results = JSON.parse(readFileSync(file, 'utf8')) as { runs: Array<{ driver: string; figures: Array<{ name: string; detail?: { rounds?: Array<{ ratio: number }> } }> }> };
  for (const run of results.runs) {
    for (const figure of run.figures) {
      const rounds = figure.detail?.rounds;
      if (rounds) series.push({ label: `${run.driver}: ${figure.name.split(':')[0]}`, ratios: rounds.map((r) => 100 * r.ratio) });
    }
  }
}

const W = 720;
const H = 360;
const pad = { left: 50, right: 200, top: 20, bottom: 40 };
const maxRound = Math.max(...series.map((s) => s.ratios.length));
const maxY = Math.max(120, ...series.flatMap((s) => s.ratios));
const x = (round: number) => pad.left + ((round - 1) / Math.max(1, maxRound - 1)) * (W - pad.left - pad.right);
const y = (pct: number) => H - pad.bottom - (pct / maxY) * (H - pad.top - pad.bottom);
const colors = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd'];

const parts: string[] = [
  `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
  `<rect width="${W}" height="${H}" fill="white"/>`,
];
for (let pct = 0; pct <= maxY; pct += 20) {
  parts.push(`<line x1="${pad.left}" x2="${W - pad.right}" y1="${y(pct)}" y2="${y(pct)}" stroke="#eee"/>`, `<text x="${pad.left - 6}" y="${y(pct) + 4}" text-anchor="end">${pct}%</text>`);
}
parts.push(`<line x1="${pad.left}" x2="${W - pad.right}" y1="${y(90)}" y2="${y(90)}" stroke="#888" stroke-dasharray="5,4"/>`);
for (let round = 1; round <= maxRound; round += Math.max(1, Math.ceil(maxRound / 10))) {
  parts.push(`<text x="${x(round)}" y="${H - pad.bottom + 16}" text-anchor="middle">${round}</text>`);
}
parts.push(`<text x="${(pad.left + W - pad.right) / 2}" y="${H - 6}" text-anchor="middle">round (100,000 jobs each; history grows by 100,000 a round)</text>`);
series.forEach((s, i) => {
  const color = colors[i % colors.length];
  parts.push(`<polyline fill="none" stroke="${color}" stroke-width="2" points="${s.ratios.map((r, j) => `${x(j + 1)},${y(r)}`).join(' ')}"/>`);
  parts.push(`<text x="${W - pad.right + 10}" y="${pad.top + 16 * (i + 1)}" fill="${color}">${s.label}</text>`);
});
parts.push(`<text x="${W - pad.right + 10}" y="${pad.top + 16 * (series.length + 2)}" fill="#888">dashed: 90% target</text>`, '</svg>');
writeFileSync(out, `${parts.join('\n')}\n`);
process.stdout.write(`${out}: ${series.length} series, ${maxRound} rounds\n`);
