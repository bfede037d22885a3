import type { CompletedJobs, Completion, InsertedJob, NewJob } from './types.js';

/** Whether any completion of the batch carries jobs to enqueue with it (`Completion.enqueue`). */
export function hasFollowUps(items: Completion[]): boolean {
  return items.some((item) => item.enqueue !== undefined && item.enqueue.length > 0);
}

/**
 * The follow-ups of a batch's completed items, for both drivers: `jobs` to insert (in
 * item order, each item's in its own order), and `split`, which hands what inserting
 * them returned back to their items as {@link CompletedJobs.enqueued}. Items not in
 * `completed` (their lease was lost) contribute nothing.
 */
export function followUpsOf(items: Completion[], completed: number[]): { jobs: NewJob[]; split(inserted: InsertedJob[]): CompletedJobs['enqueued'] } {
  const written = new Set(completed);
  const owners = items.filter((item) => written.has(item.id) && item.enqueue !== undefined && item.enqueue.length > 0);
  return {
    jobs: owners.flatMap((item) => item.enqueue!),
    split(inserted) {
      let at = 0;
      return owners.map((item) => {
        const jobs = inserted.slice(at, at + item.enqueue!.length);
        at += jobs.length;
        return { id: item.id, jobs };
      });
    },
  };
}
