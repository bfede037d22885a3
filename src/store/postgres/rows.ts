import { rowMappers, type JobRowOf, type JobSummaryRowOf, type ScheduleRowOf, type ServiceRowOf, type WorkerRowOf } from '../rows.js';

/** A `jobs` row as node-postgres returns it: bigint as string, timestamptz as Date, json parsed. */
export type JobRow = JobRowOf<string, Date, unknown>;
/** A `jobList` row: bigint as string, timestamptz as Date. */
export type JobSummaryRow = JobSummaryRowOf<string, Date, unknown>;
/** A `schedules` row (`every_ms` bigint as string). */
export type ScheduleRow = ScheduleRowOf<string, Date, unknown, boolean>;
/** A `services` row (joined with its lease). */
export type ServiceRow = ServiceRowOf<Date, boolean>;
/** A `workers` row: `queues` text[], `running` bigint[] (strings). */
export type WorkerRow = WorkerRowOf<Date, unknown[]>;

/** node-postgres' columns: bigints are strings, timestamptz Dates, json parsed, arrays arrays. */
export const { rowToJob, rowToClaimedJob, rowToJobTimeline, rowToJobSummary, rowToSchedule, rowToService, rowToWorker } = rowMappers<string, Date, unknown, boolean, unknown[]>({
  id: Number,
  time: (value) => value.getTime(),
  json: (value) => value ?? null,
  jsonText: (value) => JSON.stringify(value),
  bool: (value) => value,
  list: (value) => value,
});
