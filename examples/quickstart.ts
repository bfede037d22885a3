/**
 * Library quickstart: enqueue jobs, run a worker in the same process, wait for
 * the results, shut down gracefully.
 *
 *   node --import tsx examples/quickstart.ts
 */
import { createBaton } from 'baton-jobs';
import { countdown, greet } from './tasks.js';

const baton = await createBaton({ database: 'sqlite:./quickstart.db', tasks: [greet, countdown] });
const worker = baton.worker({ tasks: [greet, countdown], concurrency: 4 });

const finished = new Promise<void>((resolve) => {
  let left = 2;
  for (const event of ['job:completed', 'job:failed', 'job:cancelled'] as const) {
    worker.on(event, ({ job }) => {
      console.log(`job ${job.id} (${job.task}): ${event}`);
      if (--left === 0) resolve();
    });
  }
});
await worker.start();

const hello = await baton.enqueue(greet, { name: 'Ada' }); // payload type comes from the schema
const count = await baton.enqueue(countdown, { from: 3, stepMs: 200 }, { maxAttempts: 2 });
console.log(`enqueued jobs ${hello.id} and ${count.id}`);
await finished;

console.log('results:', (await baton.getJob(hello.id)).result, (await baton.getJob(count.id)).result);
const summary = await worker.stop(); // drain, abort, release; resolves with a summary
console.log('worker stopped:', summary);
await baton.close();
