import { HttpError } from './problem.js';

/** Default of {@link EventFeedOptions.maxClients}: `GET /api/events` streams open at once per app. */
export const DEFAULT_EVENT_CLIENTS = 100;

/** Options of {@link EventFeed}. */
export interface EventFeedOptions {
  /** Time between the end of one read and the start of the next, ms. */
  intervalMs: number;
  /** Streams admitted at once (both kinds of `GET /api/events`); one more is refused with 503. @defaultValue 100 ({@link DEFAULT_EVENT_CLIENTS}) */
  maxClients: number;
}

/** What a subscriber is told: each new text, or the read error that ended the feed for it. */
export interface FeedListener {
  data(text: string): void;
  error(error: unknown): void;
}

/**
 * The reads behind `GET /api/events`, shared by every client of an app: one read every
 * `intervalMs` whatever the number of clients, started by the first subscriber and
 * stopped when the last leaves, and a cap on the streams open at once.
 *
 * ```
 * idle ──first subscribe──► polling ──last unsubscribe / read error──► idle
 * ```
 * While polling, `read()` runs once per interval; a text different from the last one is
 * handed to every subscriber, and a subscriber arriving then gets the last text at once
 * (the first read of a start always counts as a change). A read that throws is handed to
 * every subscriber (each ends its stream; EventSource reconnects) and the feed goes idle.
 */
export class EventFeed {
  readonly #read: () => Promise<string>;
  readonly #options: EventFeedOptions;
  readonly #listeners = new Set<FeedListener>();
  #admitted = 0;
  #last: string | undefined;
  #polling = false;
  #wake: (() => void) | undefined;

  /** `read` answers the text to send (JSON); see {@link EventFeed}. */
  constructor(read: () => Promise<string>, options: EventFeedOptions) {
    this.#read = read;
    this.#options = options;
  }

  /** Streams admitted now. */
  get clients(): number {
    return this.#admitted;
  }

  /**
   * Takes one of the `maxClients` places for a stream; call the returned function (once) when it ends.
   * @throws HttpError busy (503) when every place is taken
   */
  admit(): () => void {
    if (this.#admitted >= this.#options.maxClients) {
      throw new HttpError('busy', `too many event streams: this server serves at most ${this.#options.maxClients} GET /api/events clients at once (the eventsMaxClients option); close one or retry later`);
    }
    this.#admitted++;
    let released = false;
    return () => {
      if (!released) this.#admitted--;
      released = true;
    };
  }

  /** Hands `listener` every new text (the last one at once when there is one) until the returned function is called. */
  subscribe(listener: FeedListener): () => void {
    this.#listeners.add(listener);
    if (this.#polling && this.#last !== undefined) listener.data(this.#last);
    if (!this.#polling) void this.#poll();
    return () => {
      this.#listeners.delete(listener);
      if (this.#listeners.size === 0) this.#wake?.();
    };
  }

  async #poll(): Promise<void> {
    this.#polling = true;
    this.#last = undefined;
    try {
      while (this.#listeners.size > 0) {
        let text: string;
        try {
          text = await this.#read();
        } catch (error) {
          for (const listener of this.#listeners) listener.error(error);
          this.#listeners.clear();
          return;
        }
        if (text !== this.#last) {
          this.#last = text;
          for (const listener of this.#listeners) listener.data(text);
        }
        if (this.#listeners.size > 0) await this.#sleep();
      }
    } finally {
      this.#polling = false;
    }
  }

  /** Waits `intervalMs`, or until the last subscriber leaves. */
  #sleep(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, this.#options.intervalMs);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.#wake = () => {
        this.#wake = undefined;
        done();
      };
    });
  }
}
