import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { ConfigError, StoreError, describeError } from '../../errors.js';
import { PGBOUNCER_SETUP } from './url.js';

/** Reconnect delays in ms: doubling from 100 ms up to 5 s. */
const RECONNECT_MIN_MS = 100;
const RECONNECT_MAX_MS = 5000;
/**
 * How long the first connection waits for its own probe notification (ms). A
 * NOTIFY reaches a listener within milliseconds; 10 s leaves room for a loaded
 * server, and a miss only logs.
 */
export const PROBE_TIMEOUT_MS = 10_000;

/** What a {@link PgListener} needs besides its URL and channels. */
export interface PgListenerOptions {
  /** The URL as messages show it: `direct database URL postgres://host:port/db` (no password). */
  label: string;
  onNotify: (message?: { channel: string; payload: string | undefined }) => void;
  /** Connection trouble (a StoreError naming the URL) and the probe's finding (a ConfigError). */
  onError: (error: unknown, where: string) => void;
  /**
   * Sends `pg_notify(channel, '')` on another connection (the pool). When given, the
   * first connection checks that a notification reaches it (see {@link PgListener}).
   */
  probe?: (channel: string) => Promise<void>;
}

/**
 * A dedicated connection that LISTENs on `channels` and calls `onNotify` with each
 * notification's channel and payload. When the connection drops (server restart, network), it logs
 * through `onError`, reconnects with backoff and LISTENs again. Each time the LISTEN is
 * up (the first time too) it calls `onNotify` once without a message: anything may have
 * changed while no connection listened. Never throws.
 *
 * With `probe`, the first connection LISTENs on a channel of its own and has the
 * pool send it one notification: when none arrives within {@link PROBE_TIMEOUT_MS},
 * `onError` gets a ConfigError saying that the URL does not reach PostgreSQL
 * itself. That is what a pooler in transaction mode (PgBouncer) does: it hands the
 * LISTENing server connection to other clients, so no notification ever comes
 * back, and LISTEN itself succeeds.
 */
export class PgListener {
  readonly #connectionString: string;
  readonly #channels: string[];
  readonly #options: PgListenerOptions;
  #client: pg.Client | undefined;
  #closed = false;
  #probed = false;
  /** The probe under way: its channel, and what to call when its notification arrives. */
  #probing: { channel: string; heard: () => void } | undefined;
  #delay = RECONNECT_MIN_MS;
  #timer: NodeJS.Timeout | undefined;
  readonly ready: Promise<void>;
  /**
   * The probe's finding: true when its notification arrived, false when it did not
   * within {@link PROBE_TIMEOUT_MS} (after `onError` got the ConfigError), undefined
   * without a probe or when it could not run (connection lost, pg_notify refused).
   */
  readonly probed: Promise<boolean | undefined>;
  #settleProbe!: (finding: boolean | undefined) => void;

  constructor(connectionString: string, channels: string[], options: PgListenerOptions) {
    this.#connectionString = connectionString;
    this.#channels = channels;
    this.#options = options;
    this.probed = new Promise((resolve) => (this.#settleProbe = resolve));
    if (!options.probe) this.#settleProbe(undefined);
    this.ready = this.#connect();
  }

  async #connect(): Promise<void> {
    if (this.#closed) return;
    const client = new pg.Client({ connectionString: this.#connectionString, application_name: 'baton' });
    client.on('error', (error) => this.#lost(client, error));
    client.on('end', () => this.#lost(client, new Error('LISTEN connection ended')));
    client.on('notification', (message) => {
      if (message.channel === this.#probing?.channel) this.#probing.heard();
      else this.#options.onNotify({ channel: message.channel, payload: message.payload });
    });
    try {
      await client.connect();
      for (const channel of this.#channels) await client.query(`LISTEN "${channel}"`);
      if (this.#closed) {
        await client.end().catch(() => undefined);
        return;
      }
      this.#client = client;
      // Up (at first, or back after an outage): look again. A change committed before LISTEN
      // took effect notified no one, and a reader that began before may have missed it.
      this.#options.onNotify();
      this.#delay = RECONNECT_MIN_MS;
      if (this.#options.probe && !this.#probed) {
        this.#probed = true;
        void this.#probe(client, this.#options.probe);
      }
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
    this.#options.onError(new StoreError('listen', error, `LISTEN connection to the ${this.#options.label}: ${describeError(error)}`), 'listen');
    const delay = this.#delay;
    this.#delay = Math.min(RECONNECT_MAX_MS, this.#delay * 2);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.#connect();
    }, delay);
    this.#timer.unref();
  }

  /** Checks that a notification sent from the pool reaches this connection (see the class). Never throws. */
  async #probe(client: pg.Client, send: (channel: string) => Promise<void>): Promise<void> {
    const channel = `baton_probe_${randomBytes(6).toString('hex')}`;
    let timer: NodeJS.Timeout | undefined;
    let finding: boolean | undefined;
    try {
      const heard = await new Promise<boolean>((resolve, reject) => {
        this.#probing = { channel, heard: () => resolve(true) };
        timer = setTimeout(() => resolve(false), PROBE_TIMEOUT_MS);
        timer.unref();
        client.query(`LISTEN "${channel}"`).then(() => send(channel)).catch(reject);
      });
      finding = heard;
      if (!heard && !this.#closed && this.#client === client) {
        this.#options.onError(
          new ConfigError(
            `the ${this.#options.label} does not deliver notifications: LISTEN succeeded but a NOTIFY sent from the pool did not arrive within ${PROBE_TIMEOUT_MS} ms. ` +
              `It must reach PostgreSQL itself, not a pooler in transaction mode (PgBouncer): with PgBouncer, ${PGBOUNCER_SETUP}. ` +
              'Until then workers notice new jobs and cancels only by polling.',
          ),
          'listen',
        );
      }
      await client.query(`UNLISTEN "${channel}"`);
    } catch {
      // The connection failed meanwhile (#lost reports it), or the pool refused pg_notify (a read-only role): no finding.
    } finally {
      clearTimeout(timer);
      this.#probing = undefined;
      this.#settleProbe(finding);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (!this.#probed) this.#settleProbe(undefined);
    clearTimeout(this.#timer);
    const client = this.#client;
    this.#client = undefined;
    if (client) {
      client.removeAllListeners('end');
      await client.end().catch(() => undefined);
    }
  }
}
