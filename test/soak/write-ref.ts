/**
 * How the soak's handlers mark what they write, so the checker can tell which write of
 * which run a stored value came from: checkpoints and results are objects with a `ref`
 * field ({@link withRef}), progress carries it in its message ({@link progressMessage}).
 */
import type { Json } from 'baton-jobs';
import type { WriteRef } from './ledger-events.js';

/** `value` with `ref` added under the key `ref`: what a handler stores as a checkpoint or result. */
export function withRef(ref: WriteRef, value: { [key: string]: Json } = {}): { [key: string]: Json } {
  return { ...value, ref: { token: ref.token, seq: ref.seq } };
}

/** The {@link WriteRef} of a stored checkpoint or result; null when it carries none (not written by a soak handler). */
export function refOf(value: Json | undefined): WriteRef | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  const ref = value.ref;
  if (ref === null || typeof ref !== 'object' || Array.isArray(ref)) return null;
  return typeof ref.token === 'number' && typeof ref.seq === 'number' ? { token: ref.token, seq: ref.seq } : null;
}

/** The progress message that carries `ref`: `ref:<token>:<seq>`. */
export const progressMessage = (ref: WriteRef): string => `ref:${ref.token}:${ref.seq}`;

/** The {@link WriteRef} in a stored progress message; null when it carries none. */
export function progressRef(progress: { message?: string } | null): WriteRef | null {
  const match = /^ref:(\d+):(\d+)$/.exec(progress?.message ?? '');
  return match ? { token: Number(match[1]), seq: Number(match[2]) } : null;
}
