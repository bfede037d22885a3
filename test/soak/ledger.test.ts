/**
 * The soak's ledger: events written by several processes read back as one ordered list;
 * a SIGKILLed writer loses nothing it had committed; a frozen writer (SIGSTOP) never
 * blocks another writer or the reader, since each process writes a file of its own.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { spawnTs } from '../helpers/child.js';
import { tempDir } from '../helpers/db.js';
import type { EntryOf } from './ledger-events.js';
import { LedgerWriter, readLedger } from './ledger.js';

const WRITER = fileURLToPath(new URL('./ledger-writer-process.ts', import.meta.url));

describe('the soak ledger', () => {
  it('reads back what each writer recorded, typed, stamped and ordered by time', () => {
    const dir = tempDir();
    const producer = new LedgerWriter(dir, 'producer');
    const nemesis = new LedgerWriter(dir, 'nemesis');
    producer.record({ kind: 'job-enqueued', jobId: 7, task: 'short', queue: 'default', key: null }, 1000);
    nemesis.record({ kind: 'fault', fault: 'sigstop', targetPid: 42, startedAt: 1500, endedAt: 4000 }, 4000);
    producer.record({ kind: 'cancel-requested', jobId: 7, outcome: 'cancelled', stateSeen: 'queued', startedAt: null }, 2000);
    producer.close();
    nemesis.close();

    const entries = readLedger(dir);
    expect(entries.map((e) => [e.kind, e.at, e.pid])).toEqual([
      ['job-enqueued', 1000, process.pid],
      ['cancel-requested', 2000, process.pid],
      ['fault', 4000, process.pid],
    ]);
    const fault = entries[2] as EntryOf<'fault'>;
    expect(fault).toMatchObject({ fault: 'sigstop', targetPid: 42, startedAt: 1500, endedAt: 4000, seq: 1 });
    expect(entries[1]).toMatchObject({ jobId: 7, outcome: 'cancelled', seq: 2 });
  });

  it('refuses a role that cannot name a file', () => {
    expect(() => new LedgerWriter(tempDir(), '../x')).toThrow(/ledger role/);
  });

  it('a SIGKILLed writer loses none of the events it had recorded, and leaves no hole', async () => {
    const dir = tempDir();
    const child = spawnTs(WRITER, [dir, '50']);
    await child.waitFor((m) => m.type === 'wrote' && (m.n as number) >= 50, '50 events written');
    child.kill('SIGKILL');
    await child.exited;
    const mine = readLedger(dir).filter((e) => e.pid === child.pid);
    expect(mine.length).toBeGreaterThanOrEqual(50);
    expect(mine.map((e) => e.seq)).toEqual(mine.map((_, i) => i + 1));
    expect(mine.map((e) => (e as EntryOf<'run-start'>).jobId)).toEqual(mine.map((_, i) => i + 1));
  });

  it('a writer frozen mid-stream (SIGSTOP) blocks neither another writer nor the reader', async () => {
    const dir = tempDir();
    const child = spawnTs(WRITER, [dir, '20']);
    await child.waitFor((m) => m.type === 'wrote', 'events written');
    child.kill('SIGSTOP');
    try {
      const writer = new LedgerWriter(dir, 'nemesis');
      writer.record({ kind: 'fault', fault: 'sigstop', targetPid: child.pid, startedAt: Date.now(), endedAt: Date.now() });
      writer.close();
      const entries = readLedger(dir);
      expect(entries.filter((e) => e.kind === 'fault')).toHaveLength(1);
      expect(entries.filter((e) => e.pid === child.pid).length).toBeGreaterThanOrEqual(20);
    } finally {
      child.kill('SIGCONT');
    }
  });
});
