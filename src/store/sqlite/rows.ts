import { rowMappers, type JobRowOf, type JobSummaryRowOf, type ScheduleRowOf, type ServiceRowOf, type WorkerRowOf } from '../rows.js';

/** A `jobs` row as better-sqlite3 returns it: times in ms, JSON as text. */
export type JobRow = JobRowOf<number, number, string>;
/** A `jobList` row: times in ms. */
export type JobSummaryRow = JobSummaryRowOf<number, number, string>;
/** A `schedules` row: `paused` 0/1. */
export type ScheduleRow = ScheduleRowOf<number, number, string, number>;
/** A `services` row (joined with its lease). */
export type ServiceRow = ServiceRowOf<number, number>;
/** A `workers` row: `queues` and `running` are JSON arrays as text. */
export type WorkerRow = WorkerRowOf<number, string>;

/** SQLite's columns: ids and times (ms) are numbers, JSON and arrays are text, booleans 0/1. */
export const { rowToJob, rowToClaimedJob, rowToJobTimeline, rowToJobSummary, rowToSchedule, rowToService, rowToWorker } = rowMappers<number, number, string, number, string>({
  id: (value) => value,
  time: (value) => value,
  json: (value) => (value === null ? null : JSON.parse(value)),
  jsonText: (value) => value,
  bool: (value) => value === 1,
  list: (value) => JSON.parse(value) as unknown[],
});
