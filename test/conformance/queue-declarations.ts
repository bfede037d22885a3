import { describe, expect, it } from 'vitest';
import type { QueueDeclaration, Store } from '../../src/store/store.js';
import { claim, insert, T0, type Harness } from './harness.js';

const declaration = (name: string, o: Partial<Omit<QueueDeclaration, 'name'>> = {}): QueueDeclaration => ({
  name, concurrency: null, rateLimit: null, keyRateLimit: null, ...o,
});
const NONE = { concurrency: false, rateLimit: false, keyRateLimit: false };

/** The values in force of `name` as the claim reads them: the limit, the queue's rate, the per-key rate. */
async function inForce(store: Store, name: string) {
  const limit = (await store.queueListLimits()).find((l) => l.queue === name);
  const rates = (await store.queueListRateLimits({ now: T0, queues: [name] })).map(({ perKey, limit: l, periodMs }) => ({ perKey, limit: l, periodMs }));
  return {
    concurrency: limit?.concurrency ?? null,
    rateLimit: rates.find((r) => !r.perKey) ? { limit: rates.find((r) => !r.perKey)!.limit, periodMs: rates.find((r) => !r.perKey)!.periodMs } : null,
    keyRateLimit: rates.find((r) => r.perKey) ? { limit: rates.find((r) => r.perKey)!.limit, periodMs: rates.find((r) => r.perKey)!.periodMs } : null,
  };
}
const settingsOf = async (store: Store, name: string) => (await store.queueListSettings()).find((s) => s.queue === name);

/** Queues declared in code (issue 30, migration 0020): queueDeclare, the overrides, queueClearOverride, queueListSettings. */
export function queueDeclarationTests(h: Harness): void {
  describe('queueDeclare, queueListSettings', () => {
    it('stores the declared settings as the values in force, creates the rows (the queues become known), and writes nothing when declared again unchanged', async () => {
      const { store } = await h.setup();
      expect(await store.queueListSettings()).toEqual([]);
      const emails = declaration('emails', { concurrency: 2, rateLimit: { limit: 10, periodMs: 1000 }, keyRateLimit: { limit: 1, periodMs: 500 } });
      expect(await store.queueDeclare({ queues: [declaration('reports'), emails], now: T0 })).toEqual(['emails', 'reports']);
      expect(await inForce(store, 'emails')).toEqual({ concurrency: 2, rateLimit: { limit: 10, periodMs: 1000 }, keyRateLimit: { limit: 1, periodMs: 500 } });
      expect(await inForce(store, 'reports')).toEqual({ concurrency: null, rateLimit: null, keyRateLimit: null });
      expect(await store.queueListSettings()).toEqual([
        { queue: 'emails', declaredAt: T0, declared: { concurrency: 2, rateLimit: { limit: 10, periodMs: 1000 }, keyRateLimit: { limit: 1, periodMs: 500 } }, overridden: NONE },
        { queue: 'reports', declaredAt: T0, declared: { concurrency: null, rateLimit: null, keyRateLimit: null }, overridden: NONE },
      ]);
      expect(await store.queueKnown({ name: 'reports', now: T0 })).toBe(true);
      // The same declaration again: no row written (declaredAt kept).
      expect(await store.queueDeclare({ queues: [emails, declaration('reports')], now: T0 + 1 })).toEqual([]);
      expect((await settingsOf(store, 'emails'))?.declaredAt).toBe(T0);
      // The claim applies the declared limit.
      for (let i = 0; i < 4; i++) await insert(store, { queue: 'emails' });
      expect(await claim(store, { queues: ['emails'], limit: 10 })).toHaveLength(2);
    });

    it('a changed declaration (a deploy) takes effect where not overridden, a setting left out is removed, and a pause is kept', async () => {
      const { store } = await h.setup();
      await store.queueDeclare({ queues: [declaration('q', { concurrency: 2, rateLimit: { limit: 10, periodMs: 1000 } })], now: T0 });
      expect(await store.queueSetPaused({ name: 'q', paused: true, now: T0 })).toBe(true);
      expect(await store.queueDeclare({ queues: [declaration('q', { concurrency: 5 })], now: T0 + 1 })).toEqual(['q']);
      expect(await inForce(store, 'q')).toEqual({ concurrency: 5, rateLimit: null, keyRateLimit: null });
      expect(await settingsOf(store, 'q')).toMatchObject({ declaredAt: T0 + 1, declared: { concurrency: 5, rateLimit: null }, overridden: NONE });
      expect((await store.queueListPaused()).map((p) => p.queue)).toEqual(['q']);
    });

    it('many processes declaring the same queues at once: no error, one row each, the declaration in force', async () => {
      const { store, another } = await h.setup();
      const others = await Promise.all([another(), another(), another()]);
      const queues = ['c', 'a', 'b'].map((name, i) => declaration(name, { concurrency: i + 1 }));
      // Each process lists them in its own order.
      const written = await Promise.all([store, ...others].map((s, i) => s.queueDeclare({ queues: i % 2 ? [...queues].reverse() : queues, now: T0 })));
      expect(written.flat().sort()).toEqual(['a', 'b', 'c']); // each row written by exactly one of them
      expect((await store.queueListSettings()).map((s) => [s.queue, s.declared.concurrency])).toEqual([['a', 2], ['b', 3], ['c', 1]]);
    });
  });

  describe('overrides: queueSetConcurrency and queueSetRateLimit over a declaration, queueClearOverride', () => {
    it('an override wins over the declaration, a new declaration does not clobber it, and clearing it puts the declared value in force', async () => {
      const { store } = await h.setup();
      await store.queueDeclare({ queues: [declaration('q', { concurrency: 4 })], now: T0 });
      expect(await store.queueSetConcurrency({ name: 'q', concurrency: 4, now: T0 + 1 })).toBe(true); // same value, now an override
      expect(await store.queueSetConcurrency({ name: 'q', concurrency: 4, now: T0 + 2 })).toBe(false);
      expect(await store.queueSetConcurrency({ name: 'q', concurrency: 2, now: T0 + 3 })).toBe(true);
      expect((await settingsOf(store, 'q'))?.overridden).toEqual({ ...NONE, concurrency: true });
      expect(await store.queueDeclare({ queues: [declaration('q', { concurrency: 10 })], now: T0 + 4 })).toEqual(['q']);
      expect((await inForce(store, 'q')).concurrency).toBe(2);
      expect((await settingsOf(store, 'q'))?.declared.concurrency).toBe(10);
      expect(await store.queueClearOverride({ name: 'q', setting: 'concurrency', now: T0 + 5 })).toBe(true);
      expect(await store.queueClearOverride({ name: 'q', setting: 'concurrency', now: T0 + 6 })).toBe(false);
      expect((await inForce(store, 'q')).concurrency).toBe(10);
      expect((await settingsOf(store, 'q'))?.overridden).toEqual(NONE);
      // Not overridden any more: the next deploy's value takes effect.
      await store.queueDeclare({ queues: [declaration('q', { concurrency: 7 })], now: T0 + 7 });
      expect((await inForce(store, 'q')).concurrency).toBe(7);
    });

    it('removing a declared limit (null) is an override until cleared; removing one that is not declared just clears it', async () => {
      const { store } = await h.setup();
      await store.queueDeclare({ queues: [declaration('q', { concurrency: 4 })], now: T0 });
      expect(await store.queueSetConcurrency({ name: 'q', concurrency: null, now: T0 + 1 })).toBe(true);
      expect(await store.queueSetConcurrency({ name: 'q', concurrency: null, now: T0 + 2 })).toBe(false);
      expect((await inForce(store, 'q')).concurrency).toBeNull();
      expect((await settingsOf(store, 'q'))?.overridden.concurrency).toBe(true);
      await store.queueDeclare({ queues: [declaration('q', { concurrency: 4 })], now: T0 + 3 });
      expect((await inForce(store, 'q')).concurrency).toBeNull();
      expect(await store.queueClearOverride({ name: 'q', setting: 'concurrency', now: T0 + 4 })).toBe(true);
      expect((await inForce(store, 'q')).concurrency).toBe(4);
      // A queue that declares no limit: set then removed by hand, nothing left to override.
      expect(await store.queueSetConcurrency({ name: 'plain', concurrency: 3, now: T0 })).toBe(true);
      expect((await settingsOf(store, 'plain'))?.overridden.concurrency).toBe(true);
      expect(await store.queueSetConcurrency({ name: 'plain', concurrency: null, now: T0 + 1 })).toBe(true);
      expect(await settingsOf(store, 'plain')).toBeUndefined();
      expect(await store.queueClearOverride({ name: 'plain', setting: 'concurrency', now: T0 + 2 })).toBe(false);
      expect(await store.queueClearOverride({ name: 'nowhere', setting: 'rateLimit', now: T0 })).toBe(false);
    });

    it('the queue rate and the per-key rate are overridden and cleared apart', async () => {
      const { store } = await h.setup();
      const rate = { limit: 10, periodMs: 1000 };
      const keyRate = { limit: 1, periodMs: 500 };
      await store.queueDeclare({ queues: [declaration('q', { rateLimit: rate, keyRateLimit: keyRate })], now: T0 });
      expect(await store.queueSetRateLimit({ name: 'q', perKey: false, rate, now: T0 + 1 })).toBe(true); // now an override
      expect(await store.queueSetRateLimit({ name: 'q', perKey: false, rate, now: T0 + 2 })).toBe(false);
      expect(await store.queueSetRateLimit({ name: 'q', perKey: true, rate: null, now: T0 + 3 })).toBe(true);
      expect((await settingsOf(store, 'q'))?.overridden).toEqual({ concurrency: false, rateLimit: true, keyRateLimit: true });
      await store.queueDeclare({ queues: [declaration('q', { rateLimit: { limit: 20, periodMs: 1000 }, keyRateLimit: { limit: 2, periodMs: 500 } })], now: T0 + 4 });
      expect(await inForce(store, 'q')).toEqual({ concurrency: null, rateLimit: rate, keyRateLimit: null });
      expect(await store.queueClearOverride({ name: 'q', setting: 'keyRateLimit', now: T0 + 5 })).toBe(true);
      expect(await inForce(store, 'q')).toEqual({ concurrency: null, rateLimit: rate, keyRateLimit: { limit: 2, periodMs: 500 } });
      expect(await store.queueClearOverride({ name: 'q', setting: 'rateLimit', now: T0 + 6 })).toBe(true);
      expect(await inForce(store, 'q')).toEqual({ concurrency: null, rateLimit: { limit: 20, periodMs: 1000 }, keyRateLimit: { limit: 2, periodMs: 500 } });
      expect((await settingsOf(store, 'q'))?.overridden).toEqual(NONE);
    });
  });
}
