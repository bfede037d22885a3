import { describe, expect, it } from 'vitest';
import { DEFAULT_PAYLOAD_LIMIT, MAX_JSON_DEPTH, PayloadTooLargeError, ValidationError, defineTask, type Baton, type Worker } from 'baton-jobs';
import { BACKGROUND_OPS, openBaton } from '../helpers/db.js';
import { waitForEvent } from '../helpers/events.js';
import { canonicalJson, createKit, sha256 } from '../fixtures/kit.js';

/**
 * C22 through the library: payloads with NUL, lone surrogates, unicode, sizes around
 * the limit and non-JSON values. The documented rule (src/job/payload.ts): NUL and lone
 * surrogates, bigint, NaN/Infinity, cyclic values, Date and other class instances and
 * `undefined` inside arrays are refused before any I/O; an object property whose value
 * is `undefined` is omitted.
 */

const LIMIT = 64 * 1024;

interface Setup {
  baton: Baton;
  worker: Worker;
  kit: ReturnType<typeof createKit>;
  /** Store operations seen, by name, but the worker's background loops' (BACKGROUND_OPS). */
  calls: string[];
}

async function setup(payloadLimit = LIMIT): Promise<Setup> {
  const calls: string[] = [];
  const baton = await openBaton({ payloadLimit }, (op) => void (BACKGROUND_OPS.has(op) || calls.push(op)));
  const kit = createKit();
  const worker = baton.worker({ tasks: kit.tasks, concurrency: 2 });
  await worker.start();
  return { baton, worker, kit, calls };
}

/** Runs payload through the real worker's `hash` handler and returns { job, result }. */
async function hashRoundTrip({ baton, worker, kit }: Setup, payload: unknown) {
  // Subscribe before enqueueing (the job can finish before enqueue returns); match by id once known.
  const outcomes = new Map<number, { result?: unknown; failure?: string }>();
  let wake = () => undefined as void;
  const offs = [
    worker.on('job:completed', (e) => (outcomes.set(e.job.id, { result: e.result }), wake())),
    worker.on('job:failed', (e) => (outcomes.set(e.job.id, { failure: e.message }), wake())),
  ];
  try {
    const job = await baton.enqueue(kit.hash, payload);
    const outcome = await new Promise<{ result?: unknown; failure?: string }>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for hash job ${job.id}`)), 60_000);
      wake = () => {
        const found = outcomes.get(job.id);
        if (found) {
          clearTimeout(timer);
          resolve(found);
        }
      };
      wake();
    });
    if (outcome.failure !== undefined) throw new Error(`hash job ${job.id} failed: ${outcome.failure}`);
    return { job, result: outcome.result };
  } finally {
    for (const off of offs) off();
  }
}

/** A control job enqueued after a case: it completes, so the worker keeps processing. */
async function controlCompletes(s: Setup, label: string): Promise<void> {
  const { result } = await hashRoundTrip(s, { control: label });
  expect(result).toBe(sha256(canonicalJson({ control: label })));
}

/** Asserts the enqueue is refused before any write: no row, no jobInsertMany call. */
async function refusedBeforeIo(s: Setup, payload: unknown): Promise<ValidationError> {
  const rowsBefore = (await s.baton.listJobs({ limit: 1000 })).length;
  s.calls.length = 0;
  const error = await s.baton.enqueue(s.kit.hash, payload).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(ValidationError);
  expect((error as ValidationError).code).toBe('validation');
  expect(s.calls).not.toContain('jobInsertMany');
  expect(s.calls).toEqual([]);
  expect((await s.baton.listJobs({ limit: 1000 })).length).toBe(rowsBefore);
  return error as ValidationError;
}

describe('C22: payload rules through the library (SQLite)', () => {
  it('C22 case 1: a NUL character in a string is refused with a ValidationError naming the field; no row', async () => {
    const s = await setup();
    const error = await refusedBeforeIo(s, { s: 'a\u0000b' });
    expect(error.issues).toEqual([{ path: ['s'], message: expect.stringMatching(/NUL/) }]);
    expect(error.message).toContain('s:');
    await controlCompletes(s, 'after NUL');
  });

  it('C22 case 1: a NUL character in a key, or nested deep, is refused naming the path', async () => {
    const s = await setup();
    const inKey = await refusedBeforeIo(s, { 'k\u0000': 1 });
    expect(inKey.issues[0]!.message).toMatch(/key contains a NUL/);
    const nested = await refusedBeforeIo(s, { a: [{ b: 'x' }, { b: '\u0000' }] });
    expect(nested.issues.map((i) => i.path)).toEqual([['a', 1, 'b']]);
    await controlCompletes(s, 'after nested NUL');
  });

  it('C22 case 2: a lone surrogate is refused with a ValidationError; no row', async () => {
    const s = await setup();
    const error = await refusedBeforeIo(s, { s: '\ud800' });
    expect(error.issues).toEqual([{ path: ['s'], message: expect.stringMatching(/surrogate/) }]);
    await refusedBeforeIo(s, { s: 'ok\udfffok' });
    await controlCompletes(s, 'after surrogate');
  });

  it('C22 case 3: emoji, accents and RTL text round-trip: handler hash equals the client hash', async () => {
    const s = await setup();
    const payload = { e: '😀', z: 'é', rtl: 'שלום', combining: 'e\u0301', pair: '\ud83d\ude00' };
    const { job, result } = await hashRoundTrip(s, payload);
    expect(result).toBe(sha256(canonicalJson(payload)));
    const stored = await s.baton.getJob(job.id);
    expect(stored.payload).toEqual(payload);
    expect(stored.result).toBe(sha256(canonicalJson(payload)));
    // No normalisation: the decomposed "é" stays two code points.
    expect((stored.payload as { combining: string }).combining).toHaveLength(2);
    await controlCompletes(s, 'after unicode');
  });

  it('C22 case 4: a 70,000-byte string round-trips without truncation', async () => {
    const s = await setup(DEFAULT_PAYLOAD_LIMIT);
    const big = 'ab€😀'.repeat(7000); // 1 + 1 + 3 + 4 = 9 bytes × 7000 = 63,000 bytes…
    const text = big + 'x'.repeat(70_000 - Buffer.byteLength(big, 'utf8')); // …padded to exactly 70,000
    expect(Buffer.byteLength(text, 'utf8')).toBe(70_000);
    const { job, result } = await hashRoundTrip(s, { s: text });
    expect(result).toBe(sha256(canonicalJson({ s: text })));
    expect(((await s.baton.getJob(job.id)).payload as { s: string }).s).toBe(text);
    await controlCompletes(s, 'after 70,000 bytes');
  });

  it('C22 case 5: a payload of exactly the limit L is accepted and round-trips', async () => {
    const s = await setup();
    const payload = { s: 'é'.repeat(100) + 'x'.repeat(LIMIT - 8 - 200) };
    expect(Buffer.byteLength(JSON.stringify(payload), 'utf8')).toBe(LIMIT);
    const { job, result } = await hashRoundTrip(s, payload);
    expect(result).toBe(sha256(canonicalJson(payload)));
    expect((await s.baton.getJob(job.id)).payload).toEqual(payload);
    await controlCompletes(s, 'after L');
  });

  it('C22 case 6: L+1 bytes is refused with PayloadTooLargeError (code payload_too_large); no row', async () => {
    const s = await setup();
    const payload = { s: 'x'.repeat(LIMIT - 8 + 1) };
    expect(Buffer.byteLength(JSON.stringify(payload), 'utf8')).toBe(LIMIT + 1);
    const error = await refusedBeforeIoTooLarge(s, payload);
    expect(error.message).toContain(`${LIMIT + 1} bytes`);
    expect(error.message).toContain(`${LIMIT} bytes`);
    await controlCompletes(s, 'after L+1');
  });

  it('C22 case 6: in enqueueMany, an item over the limit stays a PayloadTooLargeError naming its index; nothing written', async () => {
    const s = await setup();
    s.calls.length = 0;
    const error = await s.baton
      .enqueueMany([
        { task: s.kit.hash, payload: { ok: 1 } },
        { task: s.kit.hash, payload: { s: 'x'.repeat(LIMIT) } },
      ])
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PayloadTooLargeError);
    expect((error as PayloadTooLargeError).code).toBe('payload_too_large');
    expect((error as Error).message).toMatch(/^item 1 payload is \d+ bytes, over the limit of 65536 bytes$/);
    expect(s.calls).toEqual([]);
    expect(await s.baton.listJobs()).toEqual([]);
  });

  it('C22 case 6: the limit counts UTF-8 bytes, not UTF-16 code units', async () => {
    const s = await setup();
    // 'é' is one code unit but two bytes: LIMIT/2 of them are over the limit in bytes.
    const payload = { s: 'é'.repeat(LIMIT / 2) };
    expect(JSON.stringify(payload).length).toBeLessThan(LIMIT);
    await refusedBeforeIoTooLarge(s, payload);
  });

  const nonJson: Array<[string, () => unknown, (string | number)[], RegExp]> = [
    ['{n: NaN}', () => ({ n: Number.NaN }), ['n'], /NaN/],
    ['{i: Infinity}', () => ({ i: Number.POSITIVE_INFINITY }), ['i'], /Infinity/],
    ['{i: -Infinity}', () => ({ i: Number.NEGATIVE_INFINITY }), ['i'], /Infinity/],
    ['{b: 10n}', () => ({ b: 10n }), ['b'], /bigint/],
    ['a cyclic object', () => {
      const a: Record<string, unknown> = { x: 1 };
      a.self = a;
      return a;
    }, ['self'], /cyclic/],
    ['a cyclic array', () => {
      const list: unknown[] = [1];
      list.push({ back: list });
      return { list };
    }, ['list', 1, 'back'], /cyclic/],
    ['{d: new Date(0)} (class instances are refused; pass toISOString())', () => ({ d: new Date(0) }), ['d'], /Date.*toISOString/],
    ['{m: new Map()}', () => ({ m: new Map() }), ['m'], /Map/],
    ['a function', () => ({ f: () => 1 }), ['f'], /function/],
    ['a symbol', () => ({ s: Symbol('x') }), ['s'], /symbol/],
    ['undefined inside an array', () => ({ a: [1, undefined, 3] }), ['a', 1], /undefined/],
  ];
  for (const [name, make, path, message] of nonJson) {
    it(`C22 case 7: ${name} is refused with a ValidationError before any I/O`, async () => {
      const s = await setup();
      const error = await refusedBeforeIo(s, make());
      expect(error.issues).toContainEqual({ path, message: expect.stringMatching(message) });
      await controlCompletes(s, `after ${name}`);
    });
  }

  it('C22 case 7: every bad field is named, not just the first', async () => {
    const s = await setup();
    const error = await refusedBeforeIo(s, { n: Number.NaN, nested: { b: 1n, ok: 'fine', s: '\u0000' }, list: [undefined] });
    expect(error.issues.map((i) => i.path)).toEqual([['n'], ['nested', 'b'], ['nested', 's'], ['list', 0]]);
    for (const field of ['n:', 'nested.b:', 'nested.s:', 'list.0:']) expect(error.message).toContain(field);
  });

  it('C22 case 7: {u: undefined} omits the property (stored as {}), like JSON.stringify', async () => {
    const s = await setup();
    const { job, result } = await hashRoundTrip(s, { u: undefined });
    expect(job.payload).toEqual({});
    expect(Object.keys(job.payload as object)).toEqual([]);
    expect(result).toBe(sha256(canonicalJson({})));
    expect((await s.baton.getJob(job.id)).payload).toEqual({});
    await controlCompletes(s, 'after undefined property');
  });

  it('C22 case 7: a top-level undefined payload is stored as null', async () => {
    const s = await setup();
    const { job, result } = await hashRoundTrip(s, undefined);
    expect(job.payload).toBeNull();
    expect(result).toBe(sha256('null'));
  });

  it('C22: the same rules apply to each item of enqueueMany (nothing written, index named)', async () => {
    const s = await setup();
    s.calls.length = 0;
    const error = await s.baton
      .enqueueMany([
        { task: s.kit.hash, payload: { ok: 1 } },
        { task: s.kit.hash, payload: { s: 'a\u0000b' } },
      ])
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toMatch(/item 1\b/);
    expect(s.calls).toEqual([]);
    expect(await s.baton.listJobs()).toEqual([]);
  });
});

describe('C22: results and checkpoints follow the payload rules', () => {
  it('C22: a handler returning a non-JSON value (BigInt) fails the job with a clear message; the worker keeps going', async () => {
    const s = await setup();
    const bad = defineTask('bigResult', { maxAttempts: 3, handler: async () => ({ total: 10n }) as unknown });
    const worker = s.baton.worker({ tasks: [bad] });
    await worker.start();
    const failed = waitForEvent(worker, 'job:failed');
    const job = await s.baton.enqueue(bad, null);
    const event = await failed;
    expect(event.job.id).toBe(job.id);
    expect(event.retryAt).toBeNull(); // not retried: the same value would be refused again
    const stored = await s.baton.getJob(job.id);
    expect(stored.state).toBe('failed');
    expect(stored.result).toBeNull();
    expect(stored.errors).toHaveLength(1);
    expect(stored.errors[0]!.message).toMatch(/result/);
    expect(stored.errors[0]!.message).toMatch(/total/);
    expect(stored.errors[0]!.message).toMatch(/bigint/);
    await controlCompletes(s, 'after bigint result');
  });

  it('C22: a result with NUL or over the limit fails the job with a clear message', async () => {
    const s = await setup();
    const nul = defineTask('nulResult', { handler: async () => 'a\u0000b' });
    const huge = defineTask('hugeResult', { handler: async () => 'x'.repeat(LIMIT) });
    const worker = s.baton.worker({ tasks: [nul, huge] });
    await worker.start();
    const failedNul = waitForEvent(worker, 'job:failed', (e) => e.job.task === 'nulResult');
    const failedHuge = waitForEvent(worker, 'job:failed', (e) => e.job.task === 'hugeResult');
    const [a, b] = await s.baton.enqueueMany([
      { task: nul, payload: null },
      { task: huge, payload: null },
    ]);
    await failedNul;
    await failedHuge;
    expect((await s.baton.getJob(a!.id)).errors[0]!.message).toMatch(/result.*NUL/);
    expect((await s.baton.getJob(b!.id)).errors[0]!.message).toMatch(/result is \d+ bytes, over the limit/);
    await controlCompletes(s, 'after bad results');
  });

  it('C22: ctx.saveCheckpoint with a NUL string rejects with ValidationError inside the handler; nothing saved', async () => {
    const s = await setup();
    let caught: unknown;
    let threwSynchronously = false;
    const checkpointing = defineTask('badCheckpoint', {
      handler: async (_: null, ctx) => {
        let pending: Promise<void> | undefined;
        try {
          pending = ctx.saveCheckpoint({ step: 'a\u0000b' });
        } catch (error) {
          threwSynchronously = true;
          caught = error;
        }
        if (pending) caught = await pending.then(() => undefined, (error: unknown) => error);
        await ctx.saveCheckpoint({ step: 1 });
        return 'handled';
      },
    });
    const worker = s.baton.worker({ tasks: [checkpointing] });
    await worker.start();
    const done = waitForEvent(worker, 'job:completed', (e) => e.job.task === 'badCheckpoint');
    const job = await s.baton.enqueue(checkpointing, null);
    expect((await done).result).toBe('handled');
    expect(caught).toBeInstanceOf(ValidationError);
    expect((caught as ValidationError).issues).toEqual([{ path: ['step'], message: expect.stringMatching(/NUL/) }]);
    expect((caught as Error).message).toMatch(/checkpoint/);
    // A promise-returning method reports errors by rejecting, so `.catch()` works.
    expect(threwSynchronously).toBe(false);
    expect((await s.baton.getJob(job.id)).checkpoint).toEqual({ step: 1 });
  });
});

/** Like refusedBeforeIo, for the over-the-limit case: PayloadTooLargeError with its own code. */
async function refusedBeforeIoTooLarge(s: Setup, payload: unknown): Promise<PayloadTooLargeError> {
  s.calls.length = 0;
  const error = await s.baton.enqueue(s.kit.hash, payload).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(PayloadTooLargeError);
  expect(error).toBeInstanceOf(ValidationError);
  expect((error as PayloadTooLargeError).code).toBe('payload_too_large');
  expect(s.calls).toEqual([]);
  expect(await s.baton.listJobs()).toEqual([]);
  return error as PayloadTooLargeError;
}

describe('C22: nesting depth', () => {
  it(`accepts ${MAX_JSON_DEPTH} levels of nesting and refuses deeper payloads with a ValidationError, not a stack overflow`, async () => {
    const baton = await openBaton();
    const nest = (levels: number) => {
      let value: unknown = 1;
      for (let i = 0; i < levels; i++) value = i % 2 ? { a: value } : [value];
      return value;
    };
    const job = await baton.enqueue('deep', nest(MAX_JSON_DEPTH));
    expect(JSON.stringify(job.payload)).toBe(JSON.stringify(nest(MAX_JSON_DEPTH)));
    for (const levels of [MAX_JSON_DEPTH + 1, 5000, 50_000]) {
      const error = await baton.enqueue('deep', nest(levels)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as Error).message).toContain(`nested deeper than ${MAX_JSON_DEPTH} levels`);
    }
    expect(await baton.listJobs()).toHaveLength(1);
  });
});
