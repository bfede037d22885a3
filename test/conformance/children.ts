import { describe, expect, it } from 'vitest';
import type { ClaimedJob } from '../../src/job/types.js';
import type { ChildInsert, Store } from '../../src/store/store.js';
import { claimOne, get, insert, ms, newJob, running, T0, takeover, type Harness } from './harness.js';

/** A child item of `jobEnqueueChildren` for step `step` (task `kid`, queue `kids`). */
const kid = (step: string, seq: number, payload = '{}'): ChildInsert => ({ step, seq, child: newJob({ task: 'kid', queue: 'kids', payload }) });

/** Enqueues `items` as children of the running `parent`, expecting it held. */
async function enqueue(store: Store, parent: ClaimedJob, items: ChildInsert[], now = T0 + 10) {
  const answer = await store.jobEnqueueChildren({ id: parent.id, token: parent.leaseToken, attempt: parent.attempt, children: items, now });
  expect(answer).not.toBe(false);
  return answer as Array<{ childId: number; inserted: { id: number; parentId: number | null } | null }>;
}

/** Suspends `parent` waiting for children `ids` (jobSuspend). */
async function waitFor(store: Store, parent: ClaimedJob, ids: number[], now: number): Promise<void> {
  const wait = JSON.stringify({ kind: 'children', ids, until: 253402300799999 });
  expect(await store.jobSuspend({ items: [{ id: parent.id, token: parent.leaseToken, runAt: 253402300799999, wait }], now })).toEqual([parent.id]);
}

/** Child jobs (migration 24): jobEnqueueChildren (fenced, idempotent by step), jobChildren, the fan-in wake, and cancels cascading to children. */
export function childTests(h: Harness): void {
  describe('jobEnqueueChildren / jobChildren', () => {
    it('inserts the children in one transaction with their steps and parent; a replay of a step returns its child and inserts nothing', async () => {
      const { store } = await h.setup();
      const parent = await running(store);
      const first = await enqueue(store, parent, [kid('baton:child:kid', 1, '{"n":1}'), kid('baton:child:kid#2', 2, '{"n":2}')]);
      expect(first.map((a) => a.inserted?.parentId)).toEqual([parent.id, parent.id]);
      const ids = first.map((a) => a.childId);
      expect(ids[1]).toBeGreaterThan(ids[0]!);
      expect((await get(store, ids[0]!)).parentId).toBe(parent.id);
      expect((await store.jobStepList({ id: parent.id })).map((s) => [s.name, s.state, s.result])).toEqual([
        ['baton:child:kid', 'completed', String(ids[0])], ['baton:child:kid#2', 'completed', String(ids[1])],
      ]);
      // A replay: the stored steps answer, a new step inserts one more child.
      const again = await enqueue(store, parent, [kid('baton:child:kid', 1), kid('baton:child:kid#2', 2), kid('baton:child:kid#3', 3)]);
      expect(again.map((a) => [a.childId === ids[0] || a.childId === ids[1], a.inserted === null])).toEqual([[true, true], [true, true], [false, false]]);
      const children = await store.jobChildren({ id: parent.id });
      expect(children.map((c) => [c.task, c.state, c.result, c.error])).toEqual([['kid', 'queued', null, null], ['kid', 'queued', null, null], ['kid', 'queued', null, null]]);
      expect(await store.jobChildren({ id: ids[0]! })).toEqual([]);
    });

    it('refused with a stale token: false, no child and no step written', async () => {
      const { store } = await h.setup();
      const { id, stale } = await takeover(store);
      expect(await store.jobEnqueueChildren({ id, token: stale, attempt: 1, children: [kid('baton:child:kid', 1)], now: T0 + 5000 })).toBe(false);
      expect(await store.jobChildren({ id })).toEqual([]);
      expect(await store.jobStepList({ id })).toEqual([]);
    });

    it('jobChildren reads each child\'s outcome: its result when completed, its last error when failed, its reason when cancelled', async () => {
      const { store } = await h.setup();
      const parent = await running(store);
      const [a, b, c] = (await enqueue(store, parent, [kid('s1', 1), kid('s2', 2), kid('s3', 3)])).map((x) => x.childId);
      const ca = await claimOne(store, { tasks: ['kid'], queues: ['kids'] });
      const cb = await claimOne(store, { tasks: ['kid'], queues: ['kids'] });
      expect([ca.id, cb.id]).toEqual([a, b]);
      await store.jobCompleteMany({ items: [{ id: a!, token: ca.leaseToken, result: '{"ok":1}' }], now: T0 + 20 });
      await store.jobFail({ id: b!, token: cb.leaseToken, error: { attempt: 1, time: T0 + 20, message: 'boom', stack: null }, retryAt: null, now: T0 + 20 });
      await store.jobCancel({ id: c!, reason: 'nope', now: T0 + 20 });
      expect((await store.jobChildren({ id: parent.id })).map((x) => [x.id, x.state, x.result, x.error])).toEqual([
        [a, 'completed', '{"ok":1}', null], [b, 'failed', null, 'boom'], [c, 'cancelled', null, 'nope'],
      ]);
    });
  });

  describe('fan-in: a child\'s end wakes its waiting parent in the same transaction', () => {
    it('the last child to complete makes the parent due; one still running does not', async () => {
      const { store } = await h.setup();
      const parent = await running(store);
      const ids = (await enqueue(store, parent, [kid('s1', 1), kid('s2', 2)])).map((x) => x.childId);
      await waitFor(store, parent, ids, T0 + 30);
      expect(ms((await get(store, parent.id)).runAt)).toBe(253402300799999);
      const c1 = await claimOne(store, { tasks: ['kid'], queues: ['kids'] });
      const c2 = await claimOne(store, { tasks: ['kid'], queues: ['kids'] });
      await store.jobCompleteMany({ items: [{ id: c1.id, token: c1.leaseToken, result: '1' }], now: T0 + 40 });
      expect(ms((await get(store, parent.id)).runAt)).toBe(253402300799999);
      await store.jobCompleteMany({ items: [{ id: c2.id, token: c2.leaseToken, result: '2' }], now: T0 + 50 });
      expect(ms((await get(store, parent.id)).runAt)!).toBeLessThan(253402300799999);
    });

    it('children completed together in one batch make the parent due', async () => {
      const { store } = await h.setup();
      const parent = await running(store);
      const ids = (await enqueue(store, parent, [kid('s1', 1), kid('s2', 2)])).map((x) => x.childId);
      await waitFor(store, parent, ids, T0 + 30);
      const c1 = await claimOne(store, { tasks: ['kid'], queues: ['kids'] });
      const c2 = await claimOne(store, { tasks: ['kid'], queues: ['kids'] });
      const items = [c1, c2].map((c) => ({ id: c.id, token: c.leaseToken, result: '1' }));
      expect((await store.jobCompleteMany({ items, now: T0 + 40 })).completed.sort((a, b) => a - b)).toEqual([c1.id, c2.id].sort((a, b) => a - b));
      expect(ms((await get(store, parent.id)).runAt)!).toBeLessThan(253402300799999);
    });

    it('a child that fails wakes the parent at once; a suspension whose children already ended is due at once', async () => {
      const { store } = await h.setup();
      const parent = await running(store);
      const ids = (await enqueue(store, parent, [kid('s1', 1), kid('s2', 2)])).map((x) => x.childId);
      await waitFor(store, parent, ids, T0 + 30);
      const c1 = await claimOne(store, { tasks: ['kid'], queues: ['kids'] });
      await store.jobFail({ id: c1.id, token: c1.leaseToken, error: { attempt: 1, time: T0 + 40, message: 'x', stack: null }, retryAt: null, now: T0 + 40 });
      expect(ms((await get(store, parent.id)).runAt)!).toBeLessThan(253402300799999);

      const other = await running(store, { task: 'p2' }, { tasks: ['p2'] });
      const [done] = (await enqueue(store, other, [kid('s1', 1)])).map((x) => x.childId);
      await store.jobCancel({ id: done!, reason: null, now: T0 + 50 });
      await waitFor(store, other, [done!], T0 + 60);
      expect(ms((await get(store, other.id)).runAt)).toBe(T0 + 60);
    });
  });

  describe('a cancel of a parent cancels its unfinished children in the same transaction', () => {
    it('jobCancel of a running parent: queued children cancelled, running ones requested, finished ones untouched, each by "job <parent>"', async () => {
      const { store } = await h.setup();
      const parent = await running(store);
      const [a, b, c] = (await enqueue(store, parent, [kid('s1', 1), kid('s2', 2), kid('s3', 3)])).map((x) => x.childId);
      const ca = await claimOne(store, { tasks: ['kid'], queues: ['kids'] });
      await store.jobCompleteMany({ items: [{ id: a!, token: ca.leaseToken, result: '1' }], now: T0 + 20 });
      await claimOne(store, { tasks: ['kid'], queues: ['kids'] }); // b runs
      expect((await store.jobCancel({ id: parent.id, reason: 'stop', by: 'api', now: T0 + 30 }))!.outcome).toBe('requested');
      const ja = await get(store, a!);
      const jb = await get(store, b!);
      const jc = await get(store, c!);
      expect([ja.state, jb.state, jc.state]).toEqual(['completed', 'running', 'cancelled']);
      expect(ms(jb.cancelRequestedAt)).toBe(T0 + 30);
      expect([jb.cancelReason, jc.cancelReason]).toEqual([`parent job ${parent.id} cancelled`, `parent job ${parent.id} cancelled`]);
      expect((await store.jobCancelRequests({ ids: [b!] })).map((r) => r.id)).toEqual([b]);
      expect((await store.jobTimeline({ id: c! }))!.events.at(-1)).toMatchObject({ type: 'cancelRequested', by: `job ${parent.id}` });
    });

    it('jobCancelMany of a waiting (queued) parent cancels it and its children; a cancel of a finished parent touches none', async () => {
      const { store } = await h.setup();
      const parent = await running(store);
      const ids = (await enqueue(store, parent, [kid('s1', 1), kid('s2', 2)])).map((x) => x.childId);
      await waitFor(store, parent, ids, T0 + 30);
      const report = await store.jobCancelMany({ ids: [parent.id], reason: null, now: T0 + 40 });
      expect(report.cancelled).toEqual([parent.id]);
      expect((await store.jobChildren({ id: parent.id })).map((x) => x.state)).toEqual(['cancelled', 'cancelled']);

      const done = await insert(store, { task: 'p3' });
      const held = await claimOne(store, { tasks: ['p3'] });
      expect(held.id).toBe(done.id);
      const [child] = (await enqueue(store, held, [kid('s1', 1)])).map((x) => x.childId);
      await store.jobCompleteMany({ items: [{ id: held.id, token: held.leaseToken, result: '1' }], now: T0 + 50 });
      expect((await store.jobCancel({ id: held.id, reason: null, now: T0 + 60 }))!.outcome).toBe('unchanged');
      expect((await get(store, child!)).state).toBe('queued');
    });
  });
}
