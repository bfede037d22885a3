/**
 * A loop of awaited store calls lets the event loop turn. On SQLite each call answers
 * synchronously (better-sqlite3): a caller awaiting one enqueue after another never left
 * the microtask queue, and the process's timers (a worker's heartbeat, its claims)
 * waited for the loop to end, so its leases could run out. The store now lets the loop
 * turn once calls have run for MAX_TURN_MS within one turn (src/store/sqlite/busy.ts).
 * Found by a new user's try. On PostgreSQL every call waits for the network anyway.
 */
import { describe, expect, it } from 'vitest';
import { defineTask } from 'baton-jobs';
import { openBaton } from '../helpers/db.js';

describe('awaited store calls one after another', () => {
  it('let a timer due meanwhile run before the loop ends', async () => {
    const baton = await openBaton();
    const task = defineTask('turns', { handler: async () => null });
    let fired = false;
    setTimeout(() => (fired = true), 0);
    // Without the turns the loop runs all 20,000 enqueues (seconds) before the timer.
    let enqueued = 0;
    while (!fired && enqueued < 20_000) {
      await baton.enqueue(task, null);
      enqueued++;
    }
    expect(fired, `the timer had not run after ${enqueued} enqueues`).toBe(true);
  });
});
