/**
 * The room that claims in flight have reserved: a worker may run several claims at once
 * (Store.claimsInFlight), and each reserves the jobs it may bring back before it is
 * sent, so that claims in flight together never take more than the worker can hold.
 * The fetcher (fetcher.ts) subtracts what is reserved from the room it computes from
 * the runs it holds: in all, concurrency + prefetch − held − reserved; per queue, with
 * per-queue slots, slots + prefetch − held − reserved.
 *
 * A reservation is released in the same synchronous turn as its claimed jobs are added
 * to the worker's runs, so at no moment are jobs counted neither as held nor as reserved.
 */
export class Reservations {
  #total = 0;
  readonly #byQueue = new Map<string, number>();

  /** Jobs the claims in flight may still bring back, in all. */
  get total(): number {
    return this.#total;
  }

  /** Jobs the claims in flight may still bring back into `queue` (0 when none is in flight for it). */
  queue(queue: string): number {
    return this.#byQueue.get(queue) ?? 0;
  }

  /**
   * Reserves room for one claim round: `total` jobs in all, and for each of its claims
   * that claim's `limit` against every queue it names (a claim over several queues may
   * bring all its jobs back from any one of them, so each is charged the whole limit).
   * @param total - jobs the round may claim in all, ≥ 0
   * @returns a function that releases the reservation; calling it again does nothing
   */
  reserve(total: number, parts: ReadonlyArray<{ queues: readonly string[]; limit: number }>): () => void {
    this.#total += total;
    for (const part of parts) for (const queue of part.queues) this.#byQueue.set(queue, this.queue(queue) + part.limit);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#total -= total;
      for (const part of parts) {
        for (const queue of part.queues) {
          const left = this.queue(queue) - part.limit;
          if (left === 0) this.#byQueue.delete(queue);
          else this.#byQueue.set(queue, left);
        }
      }
    };
  }
}
