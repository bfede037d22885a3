import { ConflictError, NotFoundError } from '../../errors.js';
import type { SentMessage, StoreParams } from '../store.js';
import type { SqliteContext } from './context.js';
import { holds, saveStep } from './step-rows.js';

/**
 * `jobMessageSend` on SQLite: one write transaction (the write lock serializes it with
 * a release that suspends the job, so one of the two sees the other).
 */
export async function jobMessageSend(ctx: SqliteContext, { target, topic, payload, idempotencyKey, now }: StoreParams<'jobMessageSend'>): Promise<SentMessage> {
  return ctx.transaction(() => {
    const job = ('id' in target
      ? ctx.sql('SELECT id, state FROM jobs_all WHERE id = ?').get(target.id)
      : ctx.sql("SELECT id, state FROM jobs WHERE key = ? AND state IN ('queued', 'running')").get(target.key)) as { id: number; state: string } | undefined;
    if (!job) throw new NotFoundError('id' in target ? `job ${target.id} not found` : `no queued or running job has key "${target.key}"`);
    if (job.state !== 'queued' && job.state !== 'running') {
      throw new ConflictError(`job ${job.id} is ${job.state}: a message to it would never be received`, job.state);
    }
    if (idempotencyKey !== null) {
      const sent = ctx.sql('SELECT id FROM job_messages WHERE job_id = ? AND topic = ? AND idempotency_key = ?').get(job.id, topic, idempotencyKey) as { id: number } | undefined;
      if (sent) return { jobId: job.id, messageId: sent.id, created: false };
    }
    const { id } = ctx.sql('INSERT INTO job_messages (job_id, topic, payload, idempotency_key, sent_at) VALUES (?, ?, ?, ?, ?) RETURNING id')
      .get(job.id, topic, payload, idempotencyKey, now) as { id: number };
    ctx.sql(`UPDATE jobs SET run_at = @now WHERE id = @id AND state = 'queued' AND run_at > @now
      AND json_extract(wait, '$.kind') = 'message' AND json_extract(wait, '$.topic') = @topic`).run({ id: job.id, now, topic });
    return { jobId: job.id, messageId: id, created: true };
  });
}

export async function jobMessageTake(ctx: SqliteContext, { id, token, topic, step, seq, attempt, until, now }: StoreParams<'jobMessageTake'>): Promise<{ payload: string } | { until: number } | false> {
  return ctx.transaction(() => {
    if (!holds(ctx, id, token)) return false;
    const message = ctx.sql('SELECT id, payload FROM job_messages WHERE job_id = ? AND topic = ? AND taken_at IS NULL ORDER BY id LIMIT 1').get(id, topic) as { id: number; payload: string } | undefined;
    const stored = ctx.sql('SELECT started_at, result FROM job_steps WHERE job_id = ? AND name = ?').get(id, step) as { started_at: number; result: string | null } | undefined;
    const startedAt = stored?.started_at ?? now;
    if (message) {
      ctx.sql('UPDATE job_messages SET taken_at = ?, taken_by = ? WHERE id = ?').run(now, step, message.id);
      saveStep(ctx, id, { name: step, seq, state: 'completed', attempt, tries: 1, startedAt, finishedAt: now, result: message.payload, error: null });
      return { payload: message.payload };
    }
    if (stored?.result != null) return { until: Number(stored.result) };
    saveStep(ctx, id, { name: step, seq, state: 'waiting', attempt, tries: 1, startedAt, finishedAt: null, result: String(until), error: null });
    return { until };
  });
}
