import * as z from 'zod';
import { ValidationError } from '../errors.js';
import { serializeJson } from '../job/payload.js';
import type { Json } from '../job/types.js';
import { parseInput, storableString } from '../validation.js';
import { topicSchema } from '../workflow/waits.js';
import type { ClientDeps } from './deps.js';

/** Whom `baton.send` sends to: a job id, or `{ key }`: the queued or running job holding that key. */
export type SendTarget = number | { key: string };

/** Options of `baton.send`. */
export interface SendOptions {
  /**
   * 1..500 characters: a second send with the same key to the same job and topic stores
   * nothing and answers with the first message (`created` false). @defaultValue none
   */
  idempotencyKey?: string;
}

/** What `baton.send` answers. */
export interface SendResult {
  jobId: number;
  messageId: number;
  /** False when the idempotency key was used before for this job and topic: the first message stands. */
  created: boolean;
}

const targetSchema = z.union([z.number().int().positive().max(Number.MAX_SAFE_INTEGER), z.strictObject({ key: storableString().min(1).max(500) })], {
  error: 'must be a job id (a positive integer) or { key: string }',
});
const optionsSchema = z.strictObject({ idempotencyKey: storableString().min(1).max(500).optional() });

/**
 * Sends a message to a job's `ctx.receive(topic)`, from any process (issue 32). It is
 * stored in the job's mailbox and delivered exactly once, also when sent before the
 * job reaches its receive; a job suspended on that topic is woken in the same
 * transaction (and this process's workers claim at once).
 * @param payload - JSON within the payload limit; not null (a receive's null means "timed out")
 * @throws ValidationError (target, topic, payload, options: nothing stored); NotFoundError
 *   (no such job, or no queued or running job holds the key); ConflictError (the job
 *   has finished: no receive would ever take it)
 */
export async function send(deps: ClientDeps, target: SendTarget, topic: string, payload: Json, options: SendOptions = {}): Promise<SendResult> {
  const checkedTarget = parseInput(z.object({ target: targetSchema }), { target }, 'invalid send target').target;
  const checkedTopic = parseInput(z.object({ topic: topicSchema }), { topic }, 'invalid send topic').topic;
  const o = parseInput(optionsSchema, options ?? {}, 'invalid send options', { subject: 'options' });
  if (payload === null || payload === undefined) {
    throw new ValidationError('invalid message payload', [{ path: ['payload'], message: 'must not be null or undefined (a receive returns null only when it times out)' }]);
  }
  const text = serializeJson(payload, 'message payload', deps.payloadLimit);
  const sent = await deps.store.jobMessageSend({
    target: typeof checkedTarget === 'number' ? { id: checkedTarget } : { key: checkedTarget.key },
    topic: checkedTopic,
    payload: text,
    idempotencyKey: o.idempotencyKey ?? null,
    now: deps.clock.now(),
  });
  if (sent.created) deps.events.emit('job:message', { jobId: sent.jobId, topic: checkedTopic });
  return sent;
}
