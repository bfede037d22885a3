import { ConflictError, NotFoundError } from '../../errors.js';
import type { SentMessage, StoreParams } from '../store.js';
import { date, type PgContext } from './context.js';
import { readStep, saveStep } from './step-rows.js';

/**
 * A suspended receive's job woken by a message on `$3` (`$1` id, `$2` now): due now, and
 * workers of every process woken at commit.
 */
const WAKE = `
  WITH woken AS (
    UPDATE :schema.jobs SET run_at = $2 WHERE id = $1 AND state = 'queued' AND run_at > $2
      AND wait->>'kind' = 'message' AND wait->>'topic' = $3 RETURNING 1
  )
  SELECT pg_notify(':channel_jobs', '') FROM woken`;

/**
 * `jobMessageSend` on PostgreSQL, one transaction: the job row locked FOR UPDATE (a
 * release suspending it either committed before, and is woken here, or waits and then
 * sees this message), the message inserted (ON CONFLICT on the idempotency key), the
 * job woken when it waits on the topic.
 */
export async function jobMessageSend(ctx: PgContext, { target, topic, payload, idempotencyKey, now }: StoreParams<'jobMessageSend'>): Promise<SentMessage> {
  return ctx.transaction(async (client) => {
    const live = 'id' in target
      ? await client.query<{ id: string }>(ctx.sql('SELECT id FROM :schema.jobs WHERE id = $1 FOR UPDATE'), [target.id])
      : await client.query<{ id: string }>(ctx.sql("SELECT id FROM :schema.jobs WHERE key = $1 AND state IN ('queued', 'running') FOR UPDATE"), [target.key]);
    const row = live.rows[0];
    if (!row) {
      if (!('id' in target)) throw new NotFoundError(`no queued or running job has key "${target.key}"`);
      const finished = (await client.query<{ state: string }>(ctx.sql('SELECT state FROM :schema.jobs_finished WHERE id = $1'), [target.id])).rows[0];
      if (!finished) throw new NotFoundError(`job ${target.id} not found`);
      throw new ConflictError(`job ${target.id} is ${finished.state}: a message to it would never be received`, finished.state);
    }
    const jobId = Number(row.id);
    const inserted = await client.query<{ id: string }>(ctx.sql(`INSERT INTO :schema.job_messages (job_id, topic, payload, idempotency_key, sent_at)
      VALUES ($1, $2, $3::json, $4, $5) ON CONFLICT (job_id, topic, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING RETURNING id`),
    [jobId, topic, payload, idempotencyKey, date(now)]);
    if (inserted.rows.length === 0) {
      const sent = await client.query<{ id: string }>(ctx.sql('SELECT id FROM :schema.job_messages WHERE job_id = $1 AND topic = $2 AND idempotency_key = $3'), [jobId, topic, idempotencyKey]);
      return { jobId, messageId: Number(sent.rows[0]!.id), created: false };
    }
    await client.query(ctx.sql(WAKE), [jobId, date(now), topic]);
    return { jobId, messageId: Number(inserted.rows[0]!.id), created: true };
  });
}

export async function jobMessageTake(ctx: PgContext, { id, token, topic, step, seq, attempt, until, now }: StoreParams<'jobMessageTake'>): Promise<{ payload: string } | { until: number } | false> {
  return ctx.transaction(async (client) => {
    const held = await client.query(ctx.sql("SELECT 1 FROM :schema.jobs WHERE id = $1 AND lease_token = $2 AND state = 'running' FOR SHARE"), [id, token]);
    if (held.rows.length === 0) return false;
    const message = (await client.query<{ id: string; payload: string }>(ctx.sql(`SELECT id, payload::text AS payload FROM :schema.job_messages
      WHERE job_id = $1 AND topic = $2 AND taken_at IS NULL ORDER BY id LIMIT 1 FOR UPDATE`), [id, topic])).rows[0];
    const stored = await readStep(ctx, client, id, step);
    const startedAt = stored?.startedAt ?? now;
    if (message) {
      await client.query(ctx.sql('UPDATE :schema.job_messages SET taken_at = $2, taken_by = $3 WHERE id = $1'), [message.id, date(now), step]);
      await saveStep(ctx, client, id, token, { name: step, seq, state: 'completed', attempt, tries: 1, startedAt, finishedAt: now, result: message.payload, error: null });
      return { payload: message.payload };
    }
    if (stored?.result != null) return { until: Number(stored.result) };
    await saveStep(ctx, client, id, token, { name: step, seq, state: 'waiting', attempt, tries: 1, startedAt, finishedAt: null, result: String(until), error: null });
    return { until };
  });
}
