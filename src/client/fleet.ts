import { ValidationError } from '../errors.js';
import type { ClientDeps } from './deps.js';

/** A live worker process as the registry shows it (see worker/registry.ts). */
export interface WorkerInfo {
  id: string;
  host: string;
  pid: number;
  startedAt: Date;
  lastHeartbeatAt: Date;
  concurrency: number;
  queues: string[];
  /** The tasks it serves (registers); null for a worker of a version before they were recorded. */
  tasks: string[] | null;
  /** Ids of the jobs it runs, as of its last heartbeat. */
  running: number[];
}

/** Finished jobs of a queue in one minute (`minute`: its start). */
export interface ThroughputPoint {
  minute: Date;
  completed: number;
  failed: number;
}

/** Workers that heartbeat within their lease TTL, from every host sharing the database. */
export async function listWorkers(deps: ClientDeps): Promise<WorkerInfo[]> {
  const rows = await deps.store.workerList({ now: deps.clock.now() });
  return rows.map(({ expiresAt: _expires, ...r }) => ({ ...r, startedAt: new Date(r.startedAt), lastHeartbeatAt: new Date(r.lastHeartbeatAt) }));
}

/**
 * Completed and failed jobs per queue for each of the last `minutes` minutes
 * (the current one included), oldest first, zeros filled in.
 * @param minutes - 1..1440 @defaultValue 15
 * @throws ValidationError for a bad `minutes`
 */
export async function queueThroughput(deps: ClientDeps, minutes = 15): Promise<Map<string, ThroughputPoint[]>> {
  if (!Number.isInteger(minutes) || minutes < 1 || minutes > 1440) throw new ValidationError(`minutes must be an integer 1..1440, not ${minutes}`);
  const current = Math.floor(deps.clock.now() / 60_000) * 60_000;
  const first = current - (minutes - 1) * 60_000;
  const rows = await deps.store.queueThroughput({ since: first });
  const byQueue = new Map<string, ThroughputPoint[]>();
  for (const row of rows) {
    let points = byQueue.get(row.queue);
    if (!points) {
      points = Array.from({ length: minutes }, (_, i) => ({ minute: new Date(first + i * 60_000), completed: 0, failed: 0 }));
      byQueue.set(row.queue, points);
    }
    const point = points[(row.minute - first) / 60_000];
    if (point) {
      point.completed += row.completed;
      point.failed += row.failed;
    }
  }
  return byQueue;
}
