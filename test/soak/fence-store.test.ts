/**
 * The fencing store of the soak's lock sections: a token lower than one it accepted is
 * refused and recorded, equal or higher ones are applied, locks are independent, and every
 * write reaches the ledger; the HTTP transport the fleet uses gives the same answers.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Server } from 'node:http';
import type { LedgerEvent } from './ledger-events.js';
import { FenceClient, FenceStore, serveFenceStore } from './fence-store.js';

describe('the fencing store', () => {
  it('applies equal and higher tokens, refuses a lower one and keeps the newer value', () => {
    const events: LedgerEvent[] = [];
    const store = new FenceStore((e) => events.push(e));
    expect(store.write('L', 5, 'a')).toEqual({ accepted: true, highest: 5 });
    expect(store.write('L', 5, 'b')).toEqual({ accepted: true, highest: 5 }); // the same holder again
    expect(store.write('L', 7, 'c')).toEqual({ accepted: true, highest: 7 });
    expect(store.write('L', 6, 'stale')).toEqual({ accepted: false, highest: 7 }); // a holder that lost the lock
    expect(store.read('L')).toEqual({ token: 7, value: 'c' });
    expect(store.refusals).toEqual([{ lock: 'L', token: 6, highest: 7, at: expect.any(Number) }]);
    expect(store.acceptedCount).toBe(3);
    expect(events).toEqual([
      { kind: 'lock-write', lock: 'L', token: 5, accepted: true, highest: 5 },
      { kind: 'lock-write', lock: 'L', token: 5, accepted: true, highest: 5 },
      { kind: 'lock-write', lock: 'L', token: 7, accepted: true, highest: 7 },
      { kind: 'lock-write', lock: 'L', token: 6, accepted: false, highest: 7 },
    ]);
  });

  it('keeps one highest token per lock, and the first write of any token ≥ 0 is applied', () => {
    const store = new FenceStore();
    expect(store.write('A', 9, 1).accepted).toBe(true);
    expect(store.write('B', 0, 2).accepted).toBe(true);
    expect(store.write('B', 3, 3).accepted).toBe(true);
    expect(store.read('A')).toEqual({ token: 9, value: 1 });
    expect(store.read('C')).toBeUndefined();
  });

  it('refuses a token that is not a non-negative integer', () => {
    const store = new FenceStore();
    for (const bad of [-1, 1.5, Number.NaN]) expect(() => store.write('L', bad, null)).toThrow(TypeError);
  });

  describe('over HTTP', () => {
    let server: Server | undefined;
    afterEach(async () => {
      server?.closeAllConnections();
      await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    });

    it('answers the client as the store does, and 400 for a malformed write', async () => {
      const store = new FenceStore();
      const served = await serveFenceStore(store);
      server = served.server;
      const client = new FenceClient(served.url);
      expect(await client.write('L', 4, { n: 1 })).toEqual({ accepted: true, highest: 4 });
      expect(await client.write('L', 2, { n: 2 })).toEqual({ accepted: false, highest: 4 });
      expect(store.read('L')).toEqual({ token: 4, value: { n: 1 } });
      const bad = await fetch(`${served.url}/write`, { method: 'POST', body: '{"lock":1}' });
      expect(bad.status).toBe(400);
      await expect(client.write('L', -3, null)).rejects.toThrow(/400/);
    });
  });
});
