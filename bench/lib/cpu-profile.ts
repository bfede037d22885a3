import { readFileSync } from 'node:fs';
import { REPO_ROOT } from './child.js';

/** A V8 `.cpuprofile` (what `node --cpu-prof` writes). */
interface CpuProfile {
  nodes: Array<{
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
    children?: number[];
  }>;
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** One function's time in ms: `self` in its own code, `total` including callees. */
export interface FunctionTime {
  name: string;
  where: string;
  selfMs: number;
  totalMs: number;
}

/** What {@link summarizeProfile} finds. */
export interface ProfileSummary {
  /** Sampled time, idle included. */
  totalMs: number;
  idleMs: number;
  /** Self time by area (baton src/…, better-sqlite3 native, pino, zod, node internals, GC…). */
  areas: Array<{ area: string; selfMs: number }>;
  /** Functions by self time, then by total time. */
  bySelf: FunctionTime[];
  byTotal: FunctionTime[];
}

/** Where a frame belongs, for the per-area split. */
function areaOf(url: string, name: string): string {
  if (name === '(idle)') return 'idle';
  if (name === '(garbage collector)') return 'GC';
  if (name === '(program)') return 'V8/native (program)';
  if (url.includes('/src/store/sqlite/')) return 'baton src/store/sqlite (row mapping, SQL calls)';
  if (url.includes('/src/store/postgres/')) return 'baton src/store/postgres (parameters, row mapping)';
  if (url.includes('/src/')) return `baton src/${url.split('/src/')[1]!.split('/')[0]!.replace(/\.ts$/, '')}`;
  if (url.includes('/bench/')) return 'bench fixture';
  if (url.includes('node_modules/better-sqlite3')) return 'better-sqlite3 JS';
  if (/node_modules\/(pg|pg-protocol|pg-pool|pg-types|postgres-[a-z]+|pgpass|pg-connection-string)\//.test(url)) {
    return `node-postgres (${url.split('node_modules/')[1]!.split('/')[0]})`;
  }
  if (url.includes('node_modules/pino')) return 'pino (logger)';
  if (url.includes('node_modules/zod')) return 'zod';
  if (url.includes('node_modules/')) return `node_modules/${url.split('node_modules/')[1]!.split('/')[0]}`;
  if (url.startsWith('node:')) return 'node internals';
  if (url === '') return 'native / builtins (SQLite work lands here: all, get, run; socket writes for pg)';
  return 'other';
}

const shortUrl = (url: string) => url.replace(`file://${REPO_ROOT}`, '').replace(/^file:\/\//, '');

/**
 * Reads a `.cpuprofile` and sums sample time by function (self and inclusive,
 * recursion counted once) and by area. Functions are keyed by name + file + line.
 */
export function summarizeProfile(path: string, top = 20): ProfileSummary {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const key = (id: number) => {
    const f = byId.get(id)!.callFrame;
    return `${f.functionName || '(anonymous)'}\u0000${shortUrl(f.url)}:${f.lineNumber + 1}`;
  };

  const selfUs = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]!;
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }

  const self = new Map<string, number>();
  const total = new Map<string, number>();
  const areas = new Map<string, number>();
  let totalUs = 0;
  let idleUs = 0;
  for (const [id, us] of selfUs) {
    totalUs += us;
    const f = byId.get(id)!.callFrame;
    if (f.functionName === '(idle)') idleUs += us;
    const area = areaOf(f.url, f.functionName);
    areas.set(area, (areas.get(area) ?? 0) + us);
    self.set(key(id), (self.get(key(id)) ?? 0) + us);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const k = key(at);
      if (seen.has(k)) continue;
      seen.add(k);
      total.set(k, (total.get(k) ?? 0) + us);
    }
  }
  const row = (k: string): FunctionTime => {
    const [name, where] = k.split('\u0000') as [string, string];
    return { name, where, selfMs: (self.get(k) ?? 0) / 1000, totalMs: (total.get(k) ?? 0) / 1000 };
  };
  const skip = (k: string) => k.startsWith('(root)') || k.startsWith('(idle)') || k.startsWith('(program)');
  return {
    totalMs: totalUs / 1000,
    idleMs: idleUs / 1000,
    areas: [...areas].map(([area, us]) => ({ area, selfMs: us / 1000 })).sort((a, b) => b.selfMs - a.selfMs),
    bySelf: [...self.keys()].filter((k) => !skip(k)).map(row).sort((a, b) => b.selfMs - a.selfMs).slice(0, top),
    byTotal: [...total.keys()].filter((k) => !skip(k)).map(row).sort((a, b) => b.totalMs - a.totalMs).slice(0, top),
  };
}
