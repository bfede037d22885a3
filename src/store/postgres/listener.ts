import pg from 'pg';

/** Reconnect delays in ms: doubling from 100 ms up to 5 s. */
const RECONNECT_MIN_MS = 100;
const RECONNECT_MAX_MS = 5000;

/**
 * A dedicated connection that LISTENs on `channels` and calls `onNotify` with each
 * notification's channel and payload. When the connection drops (server restart, network), it logs
 * through `onError`, reconnects with backoff, LISTENs again and calls `onNotify`
 * once without a message (anything may have changed while it was away). Never throws.
 */
export class PgListener {
  readonly #connectionString: string;
  readonly #channels: string[];
  readonly #onNotify: (message?: { channel: string; payload: string | undefined }) => void;
  readonly #onError: (error: unknown, where: string) => void;
  #client: pg.Client | undefined;
  #closed = false;
  #delay = RECONNECT_MIN_MS;
  #timer: NodeJS.Timeout | undefined;
  readonly ready: Promise<void>;

  constructor(
    connectionString: string,
    channels: string[],
    onNotify: (message?: { channel: string; payload: string | undefined }) => void,
    onError: (error: unknown, where: string) => void,
  ) {
    this.#connectionString = connectionString;
    this.#channels = channels;
    this.#onNotify = onNotify;
    this.#onError = onError;
    this.ready = this.#connect();
  }

  async #connect(): Promise<void> {
    if (this.#closed) return;
    const client = new pg.Client({ connectionString: this.#connectionString, application_name: 'baton' });
    client.on('error', (error) => this.#lost(client, error));
    client.on('end', () => this.#lost(client, new Error('LISTEN connection ended')));
    client.on('notification', (message) => this.#onNotify({ channel: message.channel, payload: message.payload }));
    try {
      await client.connect();
      for (const channel of this.#channels) await client.query(`LISTEN "${channel}"`);
      if (this.#closed) {
        await client.end().catch(() => undefined);
        return;
      }
      this.#client = client;
      if (this.#delay > RECONNECT_MIN_MS) this.#onNotify(); // back after an outage: look again
      this.#delay = RECONNECT_MIN_MS;
    } catch (error) {
      this.#lost(client, error);
    }
  }

  #lost(client: pg.Client, error: unknown): void {
    if (this.#closed || this.#timer) return;
    if (this.#client && this.#client !== client) return;
    this.#client = undefined;
    client.removeAllListeners('end');
    void client.end().catch(() => undefined);
    this.#onError(error, 'listen');
    const delay = this.#delay;
    this.#delay = Math.min(RECONNECT_MAX_MS, this.#delay * 2);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.#connect();
    }, delay);
    this.#timer.unref();
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    const client = this.#client;
    this.#client = undefined;
    if (client) {
      client.removeAllListeners('end');
      await client.end().catch(() => undefined);
    }
  }
}
