/**
 * A child process for ledger.test.ts: opens a {@link LedgerWriter} on the directory in
 * argv[2], records `run-start` events for jobs 1, 2, … without end, and prints
 * `{"type":"wrote","n":N}` after the first argv[3] of them (then every 100), so the test
 * can kill or freeze it mid-stream.
 */
import { LedgerWriter } from './ledger.js';

const [dir, first] = [process.argv[2]!, Number(process.argv[3])];
const writer = new LedgerWriter(dir, 'writer');
let n = 0;
const write = () => {
  for (let i = 0; i < 10; i++) {
    n++;
    writer.record({ kind: 'run-start', jobId: n, attempt: 1, token: n, worker: 'w', claimedAt: Date.now(), queue: 'default', key: null, checkpointSeen: null });
    if (n === first || (n > first && n % 100 === 0)) process.stdout.write(`${JSON.stringify({ type: 'wrote', n })}\n`);
  }
  setTimeout(write, 1);
};
write();
