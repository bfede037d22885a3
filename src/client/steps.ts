import { NEVER, type Json } from '../job/types.js';
import type { StepRecord } from '../store/store.js';
import type { ClientDeps } from './deps.js';
import { getJob } from './query.js';

/** One step of a job's step log, as users read it (API, CLI, dashboard). */
export interface JobStep {
  /** Its identity: the name, then `#2`, `#3`… (`baton:sleep`, `baton:receive:<topic>`, `baton:child:<task>` for waits and children). */
  name: string;
  /** Its place in the log (the order steps first ran), from 1. */
  seq: number;
  state: StepRecord['state'];
  /** The job's attempt that stored it. */
  attempt: number;
  /** Tries of its function in that attempt. */
  tries: number;
  startedAt: Date;
  finishedAt: Date | null;
  /** ms from start to end; null while waiting. */
  durationMs: number | null;
  /** The stored result (completed), else null. */
  result: Json;
  /** Size of the stored result's JSON text, bytes; null when none. */
  resultBytes: number | null;
  /** The last try's error message (failed), else null. */
  error: string | null;
  /** For a waiting receive: its deadline; null without one, or for other steps. */
  until: Date | null;
}

/**
 * A job's step log (`ctx.step`, durable waits, children), in the order its steps first ran.
 * One read of the job (for NotFoundError) and one of its steps.
 * @returns [] for a job without steps
 * @throws NotFoundError when no job has this id
 */
export async function getJobSteps(deps: ClientDeps, id: number): Promise<JobStep[]> {
  await getJob(deps, id);
  return (await deps.store.jobStepList({ id })).map(toJobStep);
}

/** A stored step as a JobStep. */
export function toJobStep(s: StepRecord): JobStep {
  const waiting = s.state === 'waiting';
  const until = waiting && s.result !== null ? Number(s.result) : null;
  return {
    name: s.name,
    seq: s.seq,
    state: s.state,
    attempt: s.attempt,
    tries: s.tries,
    startedAt: new Date(s.startedAt),
    finishedAt: s.finishedAt === null ? null : new Date(s.finishedAt),
    durationMs: s.finishedAt === null ? null : s.finishedAt - s.startedAt,
    result: s.state === 'completed' && s.result !== null ? (JSON.parse(s.result) as Json) : null,
    resultBytes: s.state === 'completed' && s.result !== null ? Buffer.byteLength(s.result) : null,
    error: s.error,
    until: until === null || until >= NEVER ? null : new Date(until),
  };
}
