import { readFileSync } from 'node:fs';

/**
 * Memory of another process from /proc/<pid>/status (Linux): `VmHWM` is its peak
 * resident set so far, `VmRSS` the current one. Values in MB (10^6 bytes); null where /proc
 * is unavailable or the process is gone.
 */
export function processMemory(pid: number): { peakMB: number; currentMB: number } | null {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return null;
  }
  const kib = (field: string) => {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
    return match ? Number(match[1]) : Number.NaN;
  };
  return { peakMB: (kib('VmHWM') * 1024) / 1e6, currentMB: (kib('VmRSS') * 1024) / 1e6 };
}

/** Peak RSS of this process in MB (`process.resourceUsage().maxRSS` is in KiB). */
export function ownPeakRssMB(): number {
  return (process.resourceUsage().maxRSS * 1024) / 1e6;
}

/** Current RSS of this process in MB. */
export function ownRssMB(): number {
  return process.memoryUsage().rss / 1e6;
}
