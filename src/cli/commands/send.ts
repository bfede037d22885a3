import { Command, InvalidArgumentError } from 'commander';
import type { SendTarget } from '../../client/send.js';
import { byFlag, readJsonOption, withBaton, withDatabase } from '../options.js';
import { out, printJson } from '../output.js';

/**
 * `baton send JOB TOPIC --payload JSON`: sends a message to a job's `ctx.receive(TOPIC)`
 * (`baton.send`). JOB is an id, or `key:KEY` for the queued or running job holding that
 * key. Exit 0 when stored (or already stored under `--idempotency-key`); the client's
 * refusals exit as for other commands (not found, finished job: 1; bad input: 2).
 */
export function sendCommand(): Command {
  return withDatabase(new Command('send'))
    .description("send a message to a job's ctx.receive(topic); it is kept until received, and wakes a job waiting on the topic")
    .argument('<job>', 'job id, or key:KEY for the queued or running job holding KEY', sendTarget)
    .argument('<topic>', 'the topic the job receives on')
    .requiredOption('--payload <json>', 'the message as JSON (not null); @FILE reads it from FILE, - from stdin')
    .option('--idempotency-key <key>', 'a second send with this key to the same job and topic stores nothing')
    .option('--json', 'print the answer as JSON')
    .action(async (target: SendTarget, topic: string, flags: { payload: string; idempotencyKey?: string; json?: boolean; database?: string }) => {
      const payload = await readJsonOption('--payload', flags.payload);
      const sent = await withBaton({ database: flags.database }, (baton) =>
        baton.send(target, topic, payload as never, flags.idempotencyKey === undefined ? {} : { idempotencyKey: flags.idempotencyKey })).catch((error: unknown) => {
        throw byFlag(error);
      });
      if (flags.json) printJson(sent);
      else if (sent.created) out(`message ${sent.messageId} sent to job ${sent.jobId} on topic ${topic}`);
      else out(`message ${sent.messageId} was already sent to job ${sent.jobId} with this idempotency key; nothing stored`);
    });
}

/** `42` → 42; `key:order-7` → `{ key: 'order-7' }`. */
function sendTarget(text: string): SendTarget {
  if (text.startsWith('key:') && text.length > 4) return { key: text.slice(4) };
  if (/^[1-9]\d{0,15}$/.test(text) && Number.isSafeInteger(Number(text))) return Number(text);
  throw new InvalidArgumentError(`job must be an id or key:KEY, not ${JSON.stringify(text.slice(0, 40))}`);
}
