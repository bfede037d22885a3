/**
 * The checker's other input, Baton's final rows: `allFullJobs` reads every job whole
 * (payload, result, errors — not the list's previews) through the public API, across pages.
 */
import { describe, expect, it } from 'vitest';
import { allFullJobs } from '../helpers/client.js';
import { openBaton } from '../helpers/db.js';

describe('reading the final rows for the checker', () => {
  it('returns every job of the database, whole, past one page of 1,000', async () => {
    const baton = await openBaton();
    const payload = { text: 'x'.repeat(300) }; // longer than a list preview
    const jobs = await baton.enqueueMany(Array.from({ length: 1001 }, (_, n) => ({ task: 'short', payload: { ...payload, n } })));
    const read = await allFullJobs(baton);
    expect(read.map((j) => j.id).sort((a, b) => a - b)).toEqual(jobs.map((j) => j.id).sort((a, b) => a - b));
    expect(read.find((j) => j.id === jobs[0]!.id)!.payload).toEqual({ ...payload, n: 0 });
  });
});
