/**
 * Error classes stay `instanceof`-safe across two copies of the package: a second
 * copy of the errors module (its source copied to another directory, so Node loads
 * it as a different module with its own classes) recognises the first copy's errors
 * and the other way round, subclasses included, by the `Symbol.for` brand each class
 * carries (class names are never read: a bundler may rename them). A plain Error that only borrows a class's name is never one.
 */
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as first from '../../src/errors.js';
import { HttpError } from '../../src/http/problem.js';
import { tempDir } from '../helpers/db.js';

type ErrorsModule = typeof first;

/** A second, independent copy of src/errors.ts, as a second installed package would be. */
async function secondCopy(): Promise<ErrorsModule> {
  const file = join(tempDir(), 'errors.ts');
  copyFileSync(fileURLToPath(new URL('../../src/errors.ts', import.meta.url)), file);
  return (await import(pathToFileURL(file).href)) as ErrorsModule;
}

/** One instance of every error class of a copy, by class name. */
function instances(m: ErrorsModule): Record<string, Error> {
  return {
    BatonError: new m.BatonError('x', 'base'),
    ValidationError: new m.ValidationError('bad', [{ path: ['a'], message: 'no' }]),
    PayloadTooLargeError: new m.PayloadTooLargeError('payload', 10, 5),
    NotFoundError: new m.NotFoundError('none'),
    ConflictError: new m.ConflictError('busy', 'running'),
    ConfigError: new m.ConfigError('bad option'),
    StoreError: new m.StoreError('jobClaim', new Error('down')),
    LockBusyError: new m.LockBusyError('lock', 'someone', new Date()),
    NonRetryableError: new m.NonRetryableError('give up'),
    AbortReason: new m.AbortReason('abort', 'aborted'),
    CancelledError: new m.CancelledError('why'),
    ShutdownError: new m.ShutdownError(),
    TimeoutError: new m.TimeoutError(100),
    LeaseLostError: new m.LeaseLostError(),
  };
}

/** Each class's ancestors among Baton's classes (itself included). */
const ANCESTORS: Record<string, string[]> = {
  BatonError: ['BatonError'],
  ValidationError: ['ValidationError', 'BatonError'],
  PayloadTooLargeError: ['PayloadTooLargeError', 'ValidationError', 'BatonError'],
  NotFoundError: ['NotFoundError', 'BatonError'],
  ConflictError: ['ConflictError', 'BatonError'],
  ConfigError: ['ConfigError', 'BatonError'],
  StoreError: ['StoreError', 'BatonError'],
  LockBusyError: ['LockBusyError', 'BatonError'],
  NonRetryableError: ['NonRetryableError', 'BatonError'],
  AbortReason: ['AbortReason', 'BatonError'],
  CancelledError: ['CancelledError', 'AbortReason', 'BatonError'],
  ShutdownError: ['ShutdownError', 'AbortReason', 'BatonError'],
  TimeoutError: ['TimeoutError', 'AbortReason', 'BatonError'],
  LeaseLostError: ['LeaseLostError', 'AbortReason', 'BatonError'],
};
const CLASSES = Object.keys(ANCESTORS);

const classOf = (m: ErrorsModule, name: string) => (m as unknown as Record<string, abstract new (...args: never[]) => Error>)[name]!;

describe('errors: instanceof across two copies of the package', () => {
  it('the second copy is a different module with different classes', async () => {
    const second = await secondCopy();
    expect(second.CancelledError).not.toBe(first.CancelledError);
    expect(Object.getPrototypeOf(new second.CancelledError())).not.toBe(first.CancelledError.prototype);
    // Without the brands, the prototype chain alone would say no:
    expect(Function.prototype[Symbol.hasInstance].call(first.CancelledError, new second.CancelledError())).toBe(false);
  });

  it('every class, both ways: an error is an instance of exactly its class and its ancestors', async () => {
    const second = await secondCopy();
    // As a minifier would: the second copy's classes lose their names. Brands never read them.
    for (const [index, name] of CLASSES.entries()) Object.defineProperty(classOf(second, name), 'name', { value: `c${index}` });
    for (const [made, by] of [[first, second], [second, first]] as const) {
      for (const [name, error] of Object.entries(instances(made))) {
        for (const other of CLASSES) {
          expect(error instanceof classOf(by, other), `${name} instanceof other copy's ${other}`).toBe(ANCESTORS[name]!.includes(other));
          expect(error instanceof classOf(made, other), `${name} instanceof own copy's ${other}`).toBe(ANCESTORS[name]!.includes(other));
        }
        expect(error instanceof Error, name).toBe(true);
        expect(error.name, name).toBe(name);
      }
    }
  });

  it('a plain Error (or object) carrying a class name and code is not an instance', async () => {
    const second = await secondCopy();
    for (const name of CLASSES) {
      const impostor = Object.assign(new Error('looks alike'), { name, code: 'cancelled' });
      const lookalike = { name, message: 'x', code: 'cancelled' };
      for (const m of [first, second]) {
        expect(impostor instanceof classOf(m, name), name).toBe(false);
        expect(lookalike instanceof classOf(m, name), name).toBe(false);
      }
    }
    for (const value of [null, undefined, 1, 'CancelledError', Symbol('x')]) expect((value as unknown as object) instanceof first.BatonError).toBe(false);
  });

  it('a user\'s own subclass keeps ordinary instanceof and its class name', () => {
    class MyError extends first.CancelledError {}
    const mine = new MyError('mine');
    expect(mine).toBeInstanceOf(MyError);
    expect(mine).toBeInstanceOf(first.CancelledError);
    expect(mine).toBeInstanceOf(first.BatonError);
    expect(mine.name).toBe('MyError');
    expect(new first.CancelledError() instanceof MyError).toBe(false);
  });

  it('the HTTP layer\'s own error class is branded too', () => {
    const error = new HttpError('forbidden', 'no');
    expect(error).toBeInstanceOf(HttpError);
    expect(error).toBeInstanceOf(first.BatonError);
    expect(error.name).toBe('HttpError');
    expect(new first.BatonError('forbidden', 'no') instanceof HttpError).toBe(false);
  });
});
