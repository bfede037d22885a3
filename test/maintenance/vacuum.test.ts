/**
 * The table vacuum (src/maintenance/vacuum.ts) on both drivers: one warning per store
 * where PostgreSQL's autovacuum is off for the jobs table, none on SQLite; past its
 * threshold a check vacuums (dead rows leave, an event), below it a check only reads
 * statistics; SQLite never vacuums. The threshold is lowered for the test (the
 * worker's is 100,000 dead rows); dead rows come from real claims, completions and
 * deletes.
 */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { defineTask } from 'baton-jobs';
import { TableVacuum, type TableVacuumEvents } from '../../src/maintenance/vacuum.js';
import { TypedEmitter } from '../../src/observe/events.js';
import { churn, CHURN, statsUntil, vacuumUntil } from '../conformance/table-health.js';
import type { Store } from '../../src/store/store.js';
import { openBaton, tempDatabase } from '../helpers/db.js';
import { rawQuery } from '../helpers/raw.js';

const noop = defineTask('t', { handler: async () => null });

/** A logger whose lines land in `logs`. */
function capture() {
  const logs: Array<{ level: number; msg: string; component?: string }> = [];
  const lines: string[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void (lines.push(line), logs.push(JSON.parse(line) as (typeof logs)[number])) });
  return { logs, lines, logger };
}

const AUTOVACUUM_OFF = /autovacuum is off for the jobs table/;

describe('table vacuum', () => {
  it('where autovacuum is off for the jobs table, a store warns once, however many workers check; SQLite never warns', async () => {
    const db = tempDatabase();
    const { logs, lines, logger } = capture();
    const baton = await openBaton({ database: db.url, logger });
    if (db.driver === 'postgres') await rawQuery(db, 'ALTER TABLE jobs SET (autovacuum_enabled = off)');
    const workers = [baton.worker({ tasks: [noop], retention: false }), baton.worker({ tasks: [noop], retention: false })];
    for (const worker of workers) await worker.start();
    for (const worker of workers) {
      const report = await worker.loops.vacuum();
      expect(report.live.stats.autovacuum).toBe(db.driver === 'sqlite');
      await worker.loops.vacuum();
    }
    const warnings = logs.filter((l) => AUTOVACUUM_OFF.test(l.msg));
    expect(warnings.map((l) => l.level)).toEqual(db.driver === 'sqlite' ? [] : [40]);
    if (db.driver === 'postgres') expect(warnings[0]!.component).toBe('vacuum');
    // One "component" per line: a sub-logger's binding must not repeat its parent's key (JSON with a duplicate key).
    expect(lines.filter((line) => line.split('"component":').length > 2)).toEqual([]);
    if (db.driver === 'postgres') {
      // The table's own setting is what turned it off: reset, the server's setting decides.
      await rawQuery(db, 'ALTER TABLE jobs RESET (autovacuum_enabled)');
      const [server] = await rawQuery<{ on: boolean }>(db, "SELECT current_setting('autovacuum')::boolean AND current_setting('track_counts')::boolean AS on");
      expect((await workers[0]!.loops.vacuum()).live.stats.autovacuum).toBe(server!.on);
    }
  });

  it('past its threshold a check vacuums each part of the jobs: the dead rows leave, one event per table; below it, a check only reads; SQLite has nothing to vacuum', async () => {
    const db = tempDatabase();
    const { logger } = capture();
    const baton = await openBaton({ database: db.url, logger });
    const events = new TypedEmitter<TableVacuumEvents>();
    const seen: Array<TableVacuumEvents['jobs:vacuumed']> = [];
    events.on('jobs:vacuumed', (e) => seen.push(e));
    const errors: unknown[] = [];
    const make = (minDeadRows: number) => new TableVacuum({ store: baton.store, logger, events, minDeadRows, onError: (_loop, error) => errors.push(error) });

    await churn(baton.store);
    if (db.driver === 'sqlite') {
      const nothing = { stats: { liveRows: null, deadRows: 0, autovacuum: true }, vacuumed: false };
      expect(await make(0).runOnce()).toEqual({ live: nothing, finished: nothing });
      expect(seen).toEqual([]);
      return;
    }
    // The churn's claims and completions leave dead rows in the live jobs' table, its
    // deletes (retention's) in the finished jobs' table (PostgreSQL migration 10).
    const before = await statsUntil(baton.store, (s) => s.deadRows >= 2 * CHURN);
    const finished = await statsUntil(baton.store, (s) => s.deadRows >= CHURN, 'finished');
    expect(before.deadRows).toBeGreaterThanOrEqual(2 * CHURN);
    expect(finished.deadRows).toBeGreaterThanOrEqual(CHURN);
    // Threshold above the dead rows: nothing happens.
    expect(await make(before.deadRows + 1_000).runOnce()).toMatchObject({ live: { vacuumed: false }, finished: { vacuumed: false } });
    expect(seen).toEqual([]);
    // Threshold below: one vacuum per table, reported with the statistics that triggered it.
    const report = await make(CHURN / 2).runOnce();
    expect(report).toMatchObject({ live: { vacuumed: true }, finished: { vacuumed: true } });
    expect(seen).toEqual([
      expect.objectContaining({ part: 'live', deadRows: report.live.stats.deadRows, liveRows: report.live.stats.liveRows }),
      expect.objectContaining({ part: 'finished', deadRows: report.finished.stats.deadRows, liveRows: report.finished.stats.liveRows }),
    ]);
    expect(seen[0]!.durationMs).toBeGreaterThan(0);
    // The rows leave; a transaction another test held open during that pass keeps them
    // until a later one (the worker's next check), so vacuum again until they have.
    expect((await vacuumUntil(baton.store, (s) => s.deadRows < CHURN)).deadRows).toBeLessThan(CHURN);
    expect(errors).toEqual([]);
  });

  it('dead rows a vacuum could not remove (an older transaction still sees them) do not make every check vacuum again', async () => {
    // A store whose vacuum removes nothing, as when another session's old snapshot holds the rows.
    let stats = { liveRows: 1_000, deadRows: 0, autovacuum: false };
    let vacuums = 0;
    // Only the live part has dead rows here; the finished part never reaches a threshold.
    const store = {
      jobTableStats: async (p?: { part?: string }) => (p?.part === 'finished' ? { liveRows: 0, deadRows: 0, autovacuum: false } : { ...stats }),
      jobTableVacuum: async (p?: { part?: string }) => void (p?.part === 'live' && vacuums++),
    } as unknown as Store;
    const { logger } = capture();
    const vacuum = new TableVacuum({ store, logger, events: new TypedEmitter<TableVacuumEvents>(), minDeadRows: 100, onError: (_loop, error) => expect.fail(String(error)) });
    stats.deadRows = 150;
    expect((await vacuum.runOnce()).live.vacuumed).toBe(true);
    // Still 150 dead rows after it: the next checks leave them be.
    expect((await vacuum.runOnce()).live.vacuumed).toBe(false);
    stats.deadRows = 200;
    expect((await vacuum.runOnce()).live.vacuumed).toBe(false);
    // A threshold's worth of new dead rows (100 + 2% of 1,000) past what the last vacuum left: vacuums again.
    stats.deadRows = 150 + 120;
    expect((await vacuum.runOnce()).live.vacuumed).toBe(true);
    // Once something else cleaned the table, the threshold counts from the new low.
    stats = { ...stats, deadRows: 10 };
    expect((await vacuum.runOnce()).live.vacuumed).toBe(false);
    stats.deadRows = 10 + 120;
    expect((await vacuum.runOnce()).live.vacuumed).toBe(true);
    expect(vacuums).toBe(3);
  });
});
