import { describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import {
  ConfigError,
  createBaton,
  NotFoundError,
  ValidationError,
  defineTask,
  isTask,
  tasksFromModule,
  type Baton,
  type Job,
  type PayloadOf,
  type ResultOf,
  type Task,
} from 'baton-jobs';
import { openBaton } from '../helpers/db.js';
import { waitForEvent } from '../helpers/events.js';

const resize = defineTask('resize', {
  handler: async (payload: { url: string; width: number }) => ({ bytes: payload.width * 10, url: payload.url }),
});

const signup = defineTask('signup', {
  schema: z.object({
    email: z.email(),
    age: z.number().int().min(18),
    plan: z.enum(['free', 'pro']).default('free'),
    seats: z.coerce.number().int().positive().default(1),
  }),
  handler: async (user) => ({ welcomed: user.email, plan: user.plan, seats: user.seats }),
});

const rows = (baton: Baton) => baton.listJobs({ limit: 1000 });

describe('typed tasks: payload and result types flow from defineTask to enqueue', () => {
  it('infers the payload and result types of a task without a schema', async () => {
    expectTypeOf<PayloadOf<typeof resize>>().toEqualTypeOf<{ url: string; width: number }>();
    expectTypeOf<ResultOf<typeof resize>>().toEqualTypeOf<{ bytes: number; url: string }>();
    expectTypeOf(resize).toExtend<Task<{ url: string; width: number }, { bytes: number; url: string }>>();

    const baton = await openBaton();
    const job = await baton.enqueue(resize, { url: 'https://x.test/a.png', width: 3 });
    expectTypeOf(job).toEqualTypeOf<Job<{ url: string; width: number }, { bytes: number; url: string }>>();
    expectTypeOf(job.payload.width).toBeNumber();
    expectTypeOf(job.result).toEqualTypeOf<{ bytes: number; url: string } | null>();
    expect(job.payload).toEqual({ url: 'https://x.test/a.png', width: 3 });

    // @ts-expect-error width must be a number
    await baton.enqueue(resize, { url: 'https://x.test/b.png', width: '3' }).catch(() => undefined);
    // @ts-expect-error url is missing
    await baton.enqueue(resize, { width: 3 }).catch(() => undefined);
    // By name the payload is unknown (checked at run time only, against `tasks` when given).
    expectTypeOf(baton.enqueue('resize', { anything: true })).resolves.toEqualTypeOf<Job>();
  });

  it('infers the payload type from a schema: the handler sees the output, enqueue takes the input', async () => {
    type Output = { email: string; age: number; plan: 'free' | 'pro'; seats: number };
    expectTypeOf<PayloadOf<typeof signup>>().toEqualTypeOf<Output>();
    expectTypeOf<ResultOf<typeof signup>>().toEqualTypeOf<{ welcomed: string; plan: 'free' | 'pro'; seats: number }>();
    expectTypeOf<Parameters<typeof signup.handler>[0]>().toEqualTypeOf<Output>();

    const baton = await openBaton();
    // Fields with a default may be left out; a coerced field takes what the schema accepts.
    const job = await baton.enqueue(signup, { email: 'a@b.test', age: 30 });
    expectTypeOf(job.payload).toEqualTypeOf<Output>();
    expect(job.payload).toEqual({ email: 'a@b.test', age: 30, plan: 'free', seats: 1 });
    // @ts-expect-error age must be a number
    await baton.enqueue(signup, { email: 'a@b.test', age: '30' }).catch(() => undefined);
    // @ts-expect-error plan must be free or pro
    await baton.enqueue(signup, { email: 'a@b.test', age: 30, plan: 'gold' }).catch(() => undefined);
  });
});

describe('schema validation at enqueue (zod, Standard Schema)', () => {
  it('refuses an invalid payload with an error naming each bad field; nothing written', async () => {
    const calls: string[] = [];
    const baton = await openBaton({}, (op) => calls.push(op));
    calls.length = 0;
    const error = await baton.enqueue(signup, { email: 'not-an-email', age: 12, plan: 'gold' } as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    const issues = (error as ValidationError).issues;
    expect(issues.map((i) => i.path).sort()).toEqual([['age'], ['email'], ['plan']]);
    for (const field of ['email:', 'age:', 'plan:']) expect((error as Error).message).toContain(field);
    expect((error as Error).message).toContain('signup');
    expect(calls).not.toContain('jobInsertMany');
    expect(await rows(baton)).toEqual([]);
  });

  it('names nested fields with their full path', async () => {
    const baton = await openBaton();
    const order = defineTask('order', {
      schema: z.object({ lines: z.array(z.object({ sku: z.string().min(1), qty: z.number().int().positive() })) }),
      handler: async (o) => o.lines.length,
    });
    const error = await baton.enqueue(order, { lines: [{ sku: 'a', qty: 1 }, { sku: '', qty: 0 }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).issues.map((i) => i.path)).toEqual([
      ['lines', 1, 'sku'],
      ['lines', 1, 'qty'],
    ]);
    expect((error as Error).message).toContain('lines.1.sku');
    expect(await rows(baton)).toEqual([]);
  });

  it("stores the schema's output: defaults filled in, values coerced", async () => {
    const baton = await openBaton();
    const job = await baton.enqueue(signup, { email: 'c@d.test', age: 40, seats: '7' as unknown as number });
    expect(job.payload).toEqual({ email: 'c@d.test', age: 40, plan: 'free', seats: 7 });
    expect((await baton.getJob(job.id)).payload).toEqual({ email: 'c@d.test', age: 40, plan: 'free', seats: 7 });
  });

  it('the handler receives the stored (validated) payload and its result is stored', async () => {
    const baton = await openBaton();
    const worker = baton.worker({ tasks: [signup] });
    await worker.start();
    const done = waitForEvent(worker, 'job:completed');
    const job = await baton.enqueue(signup, { email: 'e@f.test', age: 21, plan: 'pro' });
    expect((await done).result).toEqual({ welcomed: 'e@f.test', plan: 'pro', seats: 1 });
    expect((await baton.getJob(job.id)).result).toEqual({ welcomed: 'e@f.test', plan: 'pro', seats: 1 });
  });

  it('enqueue by name is validated against the task of that name among `tasks`', async () => {
    const baton = await openBaton({ tasks: [signup, resize] });
    const error = await baton.enqueue('signup', { email: 'x', age: 20 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).issues.map((i) => i.path)).toEqual([['email']]);
    const job = await baton.enqueue('signup', { email: 'g@h.test', age: 20 });
    expect(job.payload).toEqual({ email: 'g@h.test', age: 20, plan: 'free', seats: 1 });
    expect((await rows(baton)).map((j) => j.id)).toEqual([job.id]);
  });

  it('a payload that fails the schema at run time (written by an older version) fails at once, not retried', async () => {
    const baton = await openBaton();
    // Enqueued by name without a registry: not checked at enqueue.
    const job = await baton.enqueue('signup', { email: 'bad', age: 1 }, { maxAttempts: 5 });
    const worker = baton.worker({ tasks: [signup] });
    const failed = waitForEvent(worker, 'job:failed');
    await worker.start();
    const event = await failed;
    expect(event.retryAt).toBeNull();
    const stored = await baton.getJob(job.id);
    expect(stored.state).toBe('failed');
    expect(stored.attempt).toBe(1);
    expect(stored.errors[0]!.message).toMatch(/email/);
  });
});

describe('task names and definitions', () => {
  it('enqueue by an unknown name with createBaton({ tasks }) → NotFoundError naming it; nothing written', async () => {
    const baton = await openBaton({ tasks: [resize, signup] });
    const error = await baton.enqueue('resise', { url: 'x', width: 1 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotFoundError);
    expect((error as NotFoundError).code).toBe('not_found');
    expect((error as Error).message).toContain('"resise"');
    expect((error as Error).message).toContain('resize'); // lists the known ones
    expect(await rows(baton)).toEqual([]);
  });

  it('enqueueMany with one unknown name writes nothing', async () => {
    const baton = await openBaton({ tasks: [resize] });
    const error = await baton
      .enqueueMany([
        { task: 'resize', payload: { url: 'u', width: 1 } },
        { task: 'nope', payload: {} },
      ])
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotFoundError);
    expect((error as Error).message).toContain('"nope"');
    expect((error as Error).message).toMatch(/item 1\b/);
    expect(await rows(baton)).toEqual([]);
  });

  it('without a registry, enqueue by any well-formed name is accepted', async () => {
    const baton = await openBaton();
    const job = await baton.enqueue('anything.at:all', { x: 1 });
    expect(job.task).toBe('anything.at:all');
  });

  const badNames: unknown[] = ['', 'has space', 'ünïcode', 'a'.repeat(201), 'semi;colon', 42, null, 'nul\u0000', 'lone\ud800', '\udc00'];
  for (const name of badNames) {
    it(`defineTask with the bad name ${JSON.stringify(name)?.slice(0, 20)} → ConfigError`, () => {
      expect(() => defineTask(name as string, { handler: async () => null })).toThrow(ConfigError);
    });
  }

  it('defineTask accepts names of A-Z a-z 0-9 _ . : - / up to 200 characters', () => {
    for (const name of ['a', 'mail.send', 'billing:invoice/monthly', 'A_b-9', 'x'.repeat(200)]) {
      expect(defineTask(name, { handler: async () => null }).name).toBe(name);
    }
  });

  const badOptions: Array<[string, Record<string, unknown>, RegExp]> = [
    ['no handler', {}, /handler/],
    ['a handler that is not a function', { handler: 'run' }, /handler/],
    ['maxAttempts 0', { handler: async () => null, maxAttempts: 0 }, /maxAttempts/],
    ['maxAttempts 2.5', { handler: async () => null, maxAttempts: 2.5 }, /maxAttempts/],
    ['timeout -1', { handler: async () => null, timeout: -1 }, /timeout/],
    ['timeout as a string', { handler: async () => null, timeout: '5s' }, /timeout/],
    ['timeout above the largest Node timer', { handler: async () => null, timeout: 2_147_483_648 }, /timeout/],
  ];
  for (const [name, options, message] of badOptions) {
    it(`defineTask with ${name} → ConfigError naming it`, () => {
      let error: unknown;
      try {
        defineTask('t', options as never);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toMatch(message);
      expect((error as Error).message).toContain('"t"');
    });
  }

  it('a task object is frozen and recognised by isTask', () => {
    expect(Object.isFrozen(resize)).toBe(true);
    expect(isTask(resize)).toBe(true);
    expect(isTask({ name: 'resize', handler: async () => null })).toBe(false);
    expect(isTask(null)).toBe(false);
  });

  it('createBaton({ tasks }) refuses something that is not a task → ConfigError', async () => {
    await expect(openBaton({ tasks: [{ name: 'x', handler: async () => null } as never] })).rejects.toBeInstanceOf(ConfigError);
  });

  it('createBaton refuses an option it does not know (a typo such as `datbase`) → ConfigError naming it, before any database is opened', async () => {
    await expect(createBaton({ datbase: 'sqlite:elsewhere.db' } as never)).rejects.toThrow(expect.objectContaining({ name: 'ConfigError', message: expect.stringContaining('"datbase"') }));
  });
});

describe('tasksFromModule', () => {
  const a = defineTask('a', { handler: async () => 'a' });
  const b = defineTask('b', { handler: async () => 'b' });
  const c = defineTask('c', { handler: async () => 'c' });

  it('collects named exports that are tasks and ignores the rest', () => {
    const tasks = tasksFromModule({ a, b, helper: () => 1, CONSTANT: 3, notATask: { name: 'x' } }, 'jobs.ts');
    expect(tasks.map((t) => t.name).sort()).toEqual(['a', 'b']);
  });

  it('collects a default export that is a task or an array of tasks', () => {
    expect(tasksFromModule({ default: a }, 'one.ts').map((t) => t.name)).toEqual(['a']);
    expect(tasksFromModule({ default: [a, b, 'junk'] }, 'many.ts').map((t) => t.name).sort()).toEqual(['a', 'b']);
    expect(tasksFromModule({ default: [a, b], c }, 'mixed.ts').map((t) => t.name).sort()).toEqual(['a', 'b', 'c']);
  });

  it('the same task exported twice (named and in the default array) counts once', () => {
    expect(tasksFromModule({ a, default: [a, b] }, 'dup.ts').map((t) => t.name).sort()).toEqual(['a', 'b']);
  });

  it('a module with no task → ConfigError naming the module', () => {
    expect(() => tasksFromModule({}, 'empty.ts')).toThrow(ConfigError);
    expect(() => tasksFromModule({ default: [], x: 1 }, 'empty.ts')).toThrow(/empty\.ts exports no task/);
  });

  it('two different tasks with the same name → ConfigError naming the name', () => {
    const otherA = defineTask('a', { handler: async () => 'other a' });
    let error: unknown;
    try {
      tasksFromModule({ a, otherA }, 'clash.ts');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toContain('clash.ts');
    expect((error as Error).message).toContain('"a"');
  });
});
