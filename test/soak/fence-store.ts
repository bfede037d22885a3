/**
 * The external store that `withLock` sections of the soak write their fencing token to
 * (Kleppmann's fenced storage): it remembers, per lock, the highest token it accepted and
 * refuses any write with a lower one, so a holder that was frozen past its lease and wakes
 * up believing it still holds the lock cannot overwrite what the next holder wrote.
 *
 * The store lives in the soak's own process and the fleet reaches it over HTTP
 * ({@link serveFenceStore}, {@link FenceClient}): not a shared file, because a holder
 * frozen (SIGSTOP) in the middle of a file transaction would block every other holder.
 */
import { createServer, type Server } from 'node:http';
import type { LedgerEvent } from './ledger-events.js';

/** The store's answer to one write. */
export interface FenceAnswer {
  /** True when the write was applied: `token` ≥ every token accepted before for this lock. */
  accepted: boolean;
  /** The highest token accepted for the lock, this write's included. */
  highest: number;
}

/** A write the store refused: its token was lower than `highest`. `at` is ms since the epoch. */
export interface FenceRefusal {
  lock: string;
  token: number;
  highest: number;
  at: number;
}

/** The in-memory fencing store. Tokens are integers ≥ 0 (Baton's fencing tokens). */
export class FenceStore {
  readonly #highest = new Map<string, number>();
  readonly #values = new Map<string, unknown>();
  /** Every refused write, in order. */
  readonly refusals: FenceRefusal[] = [];
  /** Writes accepted so far, all locks. */
  acceptedCount = 0;

  /** @param onWrite - called with a `lock-write` ledger event after every write, accepted or refused (e.g. `writer.record`) */
  constructor(private readonly onWrite: (event: LedgerEvent) => void = () => {}) {}

  /**
   * Writes `value` under `lock` with fencing token `token`: applied when `token` is at least
   * the highest accepted so far (a holder may write several times under its token),
   * refused (and recorded in {@link refusals}) when lower.
   * @throws TypeError when `token` is not a non-negative safe integer
   */
  write(lock: string, token: number, value: unknown): FenceAnswer {
    if (!Number.isSafeInteger(token) || token < 0) throw new TypeError(`fencing token must be a non-negative integer: ${token}`);
    const before = this.#highest.get(lock) ?? -1;
    const accepted = token >= before;
    const highest = Math.max(before, token);
    if (accepted) {
      this.#highest.set(lock, token);
      this.#values.set(lock, value);
      this.acceptedCount++;
    } else {
      this.refusals.push({ lock, token, highest, at: Date.now() });
    }
    this.onWrite({ kind: 'lock-write', lock, token, accepted, highest });
    return { accepted, highest };
  }

  /** The last value accepted under `lock` and its token; undefined before any write. */
  read(lock: string): { token: number; value: unknown } | undefined {
    const token = this.#highest.get(lock);
    return token === undefined ? undefined : { token, value: this.#values.get(lock) };
  }
}

/**
 * Serves `store` on 127.0.0.1 (an ephemeral port): `POST /write` with JSON
 * `{ lock, token, value }` answers 200 with a {@link FenceAnswer}; a malformed body 400.
 * @returns the server (close it when done: `closeAllConnections()` then `close()`) and its base URL
 */
export async function serveFenceStore(store: FenceStore): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      try {
        if (req.method !== 'POST' || req.url !== '/write') throw new TypeError('POST /write only');
        const { lock, token, value } = JSON.parse(body) as { lock: unknown; token: unknown; value: unknown };
        if (typeof lock !== 'string' || typeof token !== 'number') throw new TypeError('lock (string) and token (number) are required');
        const answer = store.write(lock, token, value);
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
      } catch (error) {
        res.writeHead(400, { 'content-type': 'text/plain' }).end((error as Error).message);
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as { port: number };
  return { server, url: `http://127.0.0.1:${port}` };
}

/** What a lock section in a fleet process uses to reach the store served by {@link serveFenceStore}. */
export class FenceClient {
  /** @param url - the store's base URL, `http://127.0.0.1:PORT` */
  constructor(readonly url: string) {}

  /**
   * Writes `value` under `lock` with `token` (the section's `fencingToken`).
   * @throws Error when the store answers other than 200, or cannot be reached
   */
  async write(lock: string, token: number, value: unknown, signal?: AbortSignal): Promise<FenceAnswer> {
    const response = await fetch(`${this.url}/write`, { method: 'POST', body: JSON.stringify({ lock, token, value }), ...(signal ? { signal } : {}) });
    if (response.status !== 200) throw new Error(`fence store answered ${response.status}: ${await response.text()}`);
    return (await response.json()) as FenceAnswer;
  }
}
