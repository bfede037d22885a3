import { CancelledError, ShutdownError, TimeoutError, type LeaseLostError } from '../errors.js';
import type { TraceSpan } from '../observe/tracing.js';

/** Why a run's handler is told to stop. */
export type AbortReason = CancelledError | ShutdownError | TimeoutError | LeaseLostError;

/**
 * The abort of one run (executor.ts): its reason (the first wins), the handler's
 * AbortSignal, made only when first asked for (most handlers never look at it; one made
 * after the abort is aborted already), and one waiter woken with the reason, so the run
 * awaits its start or its handler with no listener on a signal and no `Promise.race`.
 */
export class RunAbort {
  #controller: AbortController | undefined;
  #reason: AbortReason | undefined;
  #wake: ((reason: AbortReason) => void) | undefined;

  /** The reason, once aborted. */
  get reason(): AbortReason | undefined {
    return this.#reason;
  }

  /** The handler's signal; made on first use. */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#reason !== undefined) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  /** Aborts with `reason`: the signal, if made, fires; the waiter resolves with `reason`. Does nothing once aborted. */
  abort(reason: AbortReason): void {
    if (this.#reason !== undefined) return;
    this.#reason = reason;
    this.#controller?.abort(reason);
    this.#wake?.(reason);
  }

  /**
   * Resolves with the first of: what `arm` resolves, and the abort reason (at once when
   * aborted already). It becomes the one waiter: a later call replaces it.
   */
  until<T>(arm: (resolve: (value: T) => void) => void): Promise<T | AbortReason> {
    return new Promise<T | AbortReason>((resolve) => {
      if (this.#reason !== undefined) return resolve(this.#reason);
      this.#wake = resolve;
      arm(resolve);
    });
  }
}

/** The span event of an abort: its name and attributes by reason; none for a lost lease (`leaseLost` marks it). */
export function abortEvent(reason: AbortReason): Parameters<TraceSpan['event']> | undefined {
  if (reason instanceof CancelledError) return ['baton.cancel_requested', reason.reason === null ? {} : { 'baton.cancel.reason': reason.reason }];
  if (reason instanceof TimeoutError) return ['baton.timeout', { 'baton.timeout_ms': reason.timeoutMs }];
  if (reason instanceof ShutdownError) return ['baton.shutdown_requested'];
  return undefined;
}
