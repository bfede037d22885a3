/**
 * The invariants of durable execution: a completed step never ran again and no stale
 * step result was saved; every message was received exactly once by the job it was sent
 * to; every child was enqueued once; no parent waits for a child that ended.
 */
import type { FinalJob, Violation } from './check-types.js';
import type { History } from './history.js';

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/** Groups `items` by `key`. */
function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(key(item), [...(groups.get(key(item)) ?? []), item]);
  return groups;
}

/**
 * Per step of a job: every `ctx.step` that returned got the result of one run (`from`);
 * no step function started after that result was first returned, in another run; and the
 * result's run had not been overtaken (a newer run started) before its function returned,
 * which is when its save was made.
 */
export function checkSteps(history: History, out: Violation[]): void {
  const starts = groupBy(history.of('step-start'), (e) => `${e.jobId}\u0000${e.step}`);
  const ends = groupBy(history.of('step-end'), (e) => `${e.jobId}\u0000${e.step}`);
  for (const [key, results] of groupBy(history.of('step-result'), (e) => `${e.jobId}\u0000${e.step}`)) {
    const { jobId, step } = results[0]!;
    const producers = [...new Set(results.map((r) => r.from))];
    if (producers.length > 1) {
      out.push({ invariant: 'step-once', jobId, subject: step, why: `ctx.step returned the results of runs ${producers.join(', ')}: two saves succeeded` });
      continue;
    }
    const from = producers[0]!;
    const completedAt = Math.min(...results.map((r) => r.at));
    for (const again of (starts.get(key) ?? []).filter((s) => s.token !== from && s.at > completedAt)) {
      out.push({ invariant: 'step-once', jobId, subject: step, why: `run ${again.token} ran the step at ${again.at}, after run ${from}'s result was returned at ${completedAt}` });
    }
    const madeAt = Math.max(-Infinity, ...(ends.get(key) ?? []).filter((e) => e.token === from && e.at <= completedAt).map((e) => e.at));
    const newer = (history.runs.get(jobId) ?? []).find((r) => r.token > from && r.start < madeAt);
    if (newer) out.push({ invariant: 'stale-write', jobId, subject: step, why: `run ${from}'s step result, made at ${madeAt}, was saved though run ${newer.token} had started at ${newer.start}` });
  }
}

/**
 * Each receive (job, topic, occurrence) got at most one message; each message was
 * received in one receive only, of the job it was sent to; no message came from nowhere;
 * and every message sent to a job that completed was received (the fleet sends one message
 * per receive, which waits without a timeout).
 */
export function checkMessages(history: History, rows: Map<number, FinalJob>, out: Violation[]): void {
  const sent = new Map(history.of('message-sent').map((m) => [m.messageId, m]));
  const received = history.of('message-received').filter((r) => r.messageId !== null);
  for (const [, slot] of groupBy(received, (r) => `${r.jobId}\u0000${r.topic}\u0000${r.occurrence}`)) {
    const ids = [...new Set(slot.map((r) => r.messageId))];
    if (ids.length > 1) out.push({ invariant: 'message-once', jobId: slot[0]!.jobId, subject: slot[0]!.topic, why: `receive #${slot[0]!.occurrence} returned messages ${ids.join(', ')}` });
  }
  const byMessage = groupBy(received, (r) => r.messageId!);
  for (const [messageId, receipts] of byMessage) {
    const slots = new Set(receipts.map((r) => `${r.jobId}/${r.topic}#${r.occurrence}`));
    if (slots.size > 1) out.push({ invariant: 'message-once', jobId: receipts[0]!.jobId, subject: messageId, why: `received by ${slots.size} receives: ${[...slots].join(', ')}` });
    const message = sent.get(messageId);
    if (!message) out.push({ invariant: 'message-once', jobId: receipts[0]!.jobId, subject: messageId, why: 'received, but never sent' });
    else if (receipts.some((r) => r.jobId !== message.jobId || r.topic !== message.topic)) {
      out.push({ invariant: 'message-once', jobId: message.jobId, subject: messageId, why: `sent to job ${message.jobId} on ${message.topic}, received by ${[...slots].join(', ')}` });
    }
  }
  for (const [messageId, message] of sent) {
    if (!byMessage.has(messageId) && rows.get(message.jobId)?.state === 'completed') {
      out.push({ invariant: 'message-once', jobId: message.jobId, subject: messageId, why: `sent on ${message.topic} to a job that completed without receiving it` });
    }
  }
}

/**
 * Each `enqueueChild` of a parent's step returned one child, and each child belongs to
 * one step; a child's row names that parent; a completed parent has no child row its
 * enqueues did not return.
 */
export function checkChildren(history: History, rows: Map<number, FinalJob>, out: Violation[]): void {
  const enqueued = history.of('child-enqueued');
  for (const [, calls] of groupBy(enqueued, (e) => `${e.jobId}\u0000${e.step}`)) {
    const ids = [...new Set(calls.map((c) => c.childId))];
    if (ids.length > 1) out.push({ invariant: 'child-once', jobId: calls[0]!.jobId, subject: calls[0]!.step, why: `enqueueChild returned children ${ids.join(', ')}` });
  }
  for (const [childId, calls] of groupBy(enqueued, (e) => String(e.childId))) {
    const steps = new Set(calls.map((c) => `${c.jobId}/${c.step}`));
    if (steps.size > 1) out.push({ invariant: 'child-once', jobId: Number(childId), why: `returned by ${[...steps].join(', ')}` });
    const row = rows.get(Number(childId));
    if (row && row.parentId !== calls[0]!.jobId) out.push({ invariant: 'child-once', jobId: Number(childId), why: `its row names parent ${row.parentId}, enqueued by ${calls[0]!.jobId}` });
  }
  const returned = new Set(enqueued.map((e) => e.childId));
  for (const row of rows.values()) {
    if (row.parentId !== null && rows.get(row.parentId)?.state === 'completed' && !returned.has(row.id)) {
      out.push({ invariant: 'child-once', jobId: row.id, why: `a child of completed job ${row.parentId} that no enqueueChild returned` });
    }
  }
}

/** No job is left waiting for children that have all ended. */
export function checkChildWaits(rows: Map<number, FinalJob>, out: Violation[]): void {
  for (const row of rows.values()) {
    if (row.wait?.kind !== 'children' || TERMINAL.has(row.state)) continue;
    const ended = row.wait.ids.filter((id) => TERMINAL.has(rows.get(id)?.state ?? ''));
    if (ended.length === row.wait.ids.length) out.push({ invariant: 'child-wait', jobId: row.id, why: `still waits for children ${row.wait.ids.join(', ')}, which have all ended` });
  }
}
