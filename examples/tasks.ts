/**
 * Example tasks, loaded by the CLI without a build step:
 *
 *   npm run baton -- worker --tasks examples/tasks.ts
 *   npm run baton -- enqueue countdown --payload '{"from":60}' --tasks examples/tasks.ts
 *   npm run baton -- cancel <id>
 */
import { stat } from 'node:fs/promises';
import { z } from 'zod';
import { defineTask, NonRetryableError, sleep } from 'baton-jobs';

/** A short job: the payload is checked against the schema at enqueue and at run. */
export const greet = defineTask('greet', {
  schema: z.object({ name: z.string().min(1) }),
  handler: async ({ name }) => `hello ${name}`,
});

/**
 * A long job with a hand-made checkpoint: counts down one step per `stepMs`,
 * saving where it is after every step. Released at shutdown (or retried after a
 * crash), it goes on from the saved step. `sleep(ms, signal)` rejects with the
 * abort reason (CancelledError, ShutdownError, TimeoutError, LeaseLostError) the
 * moment the job must stop.
 */
export const countdown = defineTask('countdown', {
  schema: z.object({ from: z.number().int().positive(), stepMs: z.number().int().positive().default(1000) }),
  handler: async ({ from, stepMs }, ctx) => {
    let left = (ctx.checkpoint as { left?: number } | null)?.left ?? from;
    while (left > 0) {
      await sleep(stepMs, ctx.signal);
      left--;
      await ctx.saveCheckpoint({ left });
      ctx.progress(from - left, from, `${left} to go`);
    }
    return 'liftoff';
  },
});

/**
 * A long job over many items with `ctx.forEach`: at most 4 files at once; the
 * indices done are saved in the checkpoint every 100 files, so a resumed attempt
 * skips them. A file that does not exist fails the job at once (no retry).
 */
export const fileSizes = defineTask('file-sizes', {
  schema: z.object({ files: z.array(z.string().min(1)).max(100_000) }),
  maxAttempts: 5,
  handler: async ({ files }, ctx) => {
    let bytes = 0;
    const { done, skipped } = await ctx.forEach(
      files,
      async (file) => {
        const info = await stat(file).catch((error: NodeJS.ErrnoException) => {
          throw error.code === 'ENOENT' ? new NonRetryableError(`${file} does not exist`) : error;
        });
        bytes += info.size;
      },
      { concurrency: 4, checkpointEvery: 100 },
    );
    ctx.progress(done + skipped, files.length);
    return { files: done, skipped, bytesOfThisAttempt: bytes };
  },
});
