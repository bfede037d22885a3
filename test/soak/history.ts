/**
 * The soak ledger indexed for the checker: the runs of each job (one per lease token),
 * when each ended, and which nemesis fault hit which process when.
 */
import type { EntryOf, FaultKind, LedgerEntry, LedgerEvent, WriteRef } from './ledger-events.js';

/** One run of a handler: from its `run-start` to its `run-end`, or to the death of its process. */
export interface Run {
  jobId: number;
  token: number;
  attempt: number;
  pid: number;
  /** When the handler started, ms (ledger time). */
  start: number;
  /** When the database claimed it, ms. */
  claimedAt: number;
  /**
   * When its holder took the job, ms: the claim, or the handler's start when that reads
   * earlier. A fault from here on hit the run, also one that froze the holder between the
   * claim and the handler's first line (which then records its start only after the freeze).
   */
  heldFrom: number;
  queue: string;
  key: string | null;
  checkpointSeen: WriteRef | null;
  /** Its `run-end`; undefined when the handler never settled (process killed, or still frozen at the end). */
  end: EntryOf<'run-end'> | undefined;
  /** When it stopped running, ms: its `run-end`, else its process's exit or SIGKILL, else Infinity. */
  endAt: number;
}

/** The ledger, indexed. */
export interface History {
  entries: readonly LedgerEntry[];
  /** Runs per job, in token order. */
  runs: Map<number, Run[]>;
  /** Every fault the nemesis recorded, in time order. */
  faults: EntryOf<'fault'>[];
  /** The entries of one kind, in time order. */
  of<K extends LedgerEvent['kind']>(kind: K): EntryOf<K>[];
  /**
   * The first fault of one of `kinds` that hit process `pid` within [from, to] (ms; the
   * fault's own interval intersects it); undefined when none did.
   */
  hit(pid: number, from: number, to: number, kinds: readonly FaultKind[]): EntryOf<'fault'> | undefined;
  /**
   * Why process `pid` may have lost what it held within [from, to]: a fault of one of `kinds`
   * that hit it ({@link hit}); or, when freezes stall every process (`freezeStallsAll`) and
   * `kinds` includes `sigstop`, a freeze of any process then (`stall` true). Undefined when neither.
   */
  explain(pid: number, from: number, to: number, kinds: readonly FaultKind[]): { fault: EntryOf<'fault'>; stall: boolean } | undefined;
  /** When process `pid` stopped for good after `after` (its exit, or a SIGKILL of it), ms; Infinity when it did not. */
  deathAfter(pid: number, after: number): number;
}

/** How the database the soak ran on shares faults between processes. */
export interface HistoryOptions {
  /**
   * A freeze of any process may stall every process: on SQLite one write lock serves the
   * whole file, and a process frozen inside a write transaction keeps it for the freeze, so
   * no other process can renew a lease or store an outcome — a database outage for all.
   * @defaultValue false (PostgreSQL: a frozen client holds only its own rows)
   */
  freezeStallsAll?: boolean;
}

/** Indexes `entries` (as {@link readLedger} returns them: ordered by time). */
export function indexHistory(entries: readonly LedgerEntry[], options: HistoryOptions = {}): History {
  const byKind = new Map<string, LedgerEntry[]>();
  for (const entry of entries) {
    const list = byKind.get(entry.kind) ?? [];
    list.push(entry);
    byKind.set(entry.kind, list);
  }
  const of = <K extends LedgerEvent['kind']>(kind: K) => (byKind.get(kind) ?? []) as EntryOf<K>[];
  const faults = of('fault');
  const deaths = [
    ...of('process-exit').map((e) => ({ pid: e.targetPid, at: e.at })),
    ...faults.filter((f) => f.fault === 'sigkill' && f.targetPid !== null).map((f) => ({ pid: f.targetPid!, at: f.startedAt })),
  ];
  const deathAfter = (pid: number, after: number) => Math.min(Infinity, ...deaths.filter((d) => d.pid === pid && d.at >= after).map((d) => d.at));

  const ends = new Map<string, EntryOf<'run-end'>>();
  for (const end of of('run-end')) ends.set(`${end.jobId}:${end.token}`, end);
  const runs = new Map<number, Run[]>();
  for (const start of of('run-start')) {
    const end = ends.get(`${start.jobId}:${start.token}`);
    const run: Run = {
      jobId: start.jobId,
      token: start.token,
      attempt: start.attempt,
      pid: start.pid,
      start: start.at,
      claimedAt: start.claimedAt,
      heldFrom: Math.min(start.claimedAt, start.at),
      queue: start.queue,
      key: start.key,
      checkpointSeen: start.checkpointSeen,
      end,
      endAt: end?.at ?? deathAfter(start.pid, start.at),
    };
    runs.set(start.jobId, [...(runs.get(start.jobId) ?? []), run]);
  }
  for (const list of runs.values()) list.sort((a, b) => a.token - b.token || a.start - b.start);

  const within = (f: EntryOf<'fault'>, from: number, to: number) => f.startedAt <= to && f.endedAt >= from;
  const hit = (pid: number, from: number, to: number, kinds: readonly FaultKind[]) => faults.find((f) => f.targetPid === pid && kinds.includes(f.fault) && within(f, from, to));
  return {
    entries,
    runs,
    faults,
    of,
    hit,
    explain: (pid, from, to, kinds) => {
      const fault = hit(pid, from, to, kinds);
      if (fault) return { fault, stall: false };
      const freeze = options.freezeStallsAll && kinds.includes('sigstop') ? faults.find((f) => f.fault === 'sigstop' && within(f, from, to)) : undefined;
      return freeze ? { fault: freeze, stall: true } : undefined;
    },
    deathAfter,
  };
}
