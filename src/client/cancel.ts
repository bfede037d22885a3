import { NotFoundError, ValidationError } from '../errors.js';
import * as z from 'zod';
import { stringProblems } from '../job/payload.js';
import { parseInput, storableString } from '../validation.js';
import type { Job } from '../job/types.js';
import type { CancelOutcome } from '../store/store.js';
import type { ClientDeps } from './deps.js';
import { knownJobId } from './query.js';

/** What `cancel` answers. */
export interface CancelResult {
  /** `cancelled`: queued → cancelled now; `requested`: running, the worker will abort it; `unchanged`: already terminal. */
  outcome: CancelOutcome;
  /** The job after the call; when `unchanged`, its `state` says which terminal state it is in. */
  job: Job;
}

/** Options of `cancel`. */
export interface CancelOptions {
  /**
   * Who asks, as the job's timeline shows it ("cancel requested by …"): 1..200
   * characters, no NUL or lone surrogate. The HTTP API says "http", the CLI "cli".
   * @defaultValue 'api'
   */
  by?: string;
}

/**
 * Cancels a job from any process. queued → cancelled at once; running → the request
 * is stored and reaches the worker holding the lease (which aborts the handler's
 * signal with CancelledError); terminal → no change. Calling it twice is harmless.
 * A new request is recorded in the job's timeline with who asked (`options.by`).
 * @param reason - free text passed to the handler as `CancelledError.reason`; at most {@link MAX_REASON} characters, no NUL or lone surrogate (the payload's string rule)
 * @throws NotFoundError when no job has that id (or `id` is not a positive integer);
 *   ValidationError (path `["reason"]` or `["by"]`) for a reason or actor that is not such a string, before anything is written
 */
export async function cancel(deps: ClientDeps, id: number, reason: string | null = null, options: CancelOptions = {}): Promise<CancelResult> {
  checkReason(reason);
  const by = cancelActor(options.by);
  const answer = await deps.store.jobCancel({ id: knownJobId(id), reason, by, now: deps.clock.now() });
  if (!answer) throw new NotFoundError(`no job with id ${id}`);
  return answer;
}

/** The longest cancel reason, in characters: the HTTP body's limit. */
export const MAX_REASON = 10_000;

const actorSchema = storableString().min(1).max(200);

/**
 * Who asks for a cancel: `by` checked (1..200 characters, no NUL or lone surrogate), or 'api'.
 * @throws ValidationError (path `["by"]`)
 */
function cancelActor(by: unknown): string {
  if (by === undefined) return 'api';
  return parseInput(z.object({ by: actorSchema }), { by }, 'invalid cancel actor').by;
}

function checkReason(reason: unknown): void {
  if (reason === null || reason === undefined) return;
  const problems = typeof reason !== 'string' ? ['must be a string or null'] : [...stringProblems(reason, 'reason'), ...(reason.length > MAX_REASON ? [`at most ${MAX_REASON} characters (got ${reason.length})`] : [])];
  if (problems.length > 0) throw new ValidationError('invalid cancel reason', problems.map((message) => ({ path: ['reason'], message })));
}
