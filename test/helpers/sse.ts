/** Reading a Server-Sent Events answer in tests (`GET /api/events`). */

/** One server-sent event, its data parsed as JSON. */
export interface Sse {
  event: string;
  data: any;
}

/** Reads the SSE events of `response` one by one; comments (heartbeats) are skipped. */
export function sseReader(response: Response) {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  const seen: Sse[] = [];
  const next = async (): Promise<Sse | null> => {
    for (;;) {
      const end = buffer.indexOf('\n\n');
      if (end >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const lines = block.split('\n').filter((line) => !line.startsWith(':'));
        if (lines.length === 0) continue;
        const event = lines.find((l) => l.startsWith('event:'))?.slice(6).trim() ?? 'message';
        const data = lines.filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trimStart()).join('\n');
        const sse = { event, data: JSON.parse(data) };
        seen.push(sse);
        return sse;
      }
      const { value, done } = await reader.read();
      if (done) return null;
      buffer += value;
    }
  };
  return {
    seen,
    next,
    /** Closes the stream from the client's side (as a closed tab does): the server ends it. */
    cancel: () => reader.cancel(),
    /** Reads events until one passes `match`; fails when the stream ends first. */
    async until(match: (sse: Sse) => boolean, what: string): Promise<Sse> {
      for (;;) {
        const sse = await next();
        if (sse === null) throw new Error(`the stream ended before ${what}; events: ${JSON.stringify(seen)}`);
        if (match(sse)) return sse;
      }
    },
    /** Reads events until the job they built up (see merged) passes `match`, at once when it already does. */
    async reach(match: (job: Record<string, any>) => boolean, what: string): Promise<Record<string, any>> {
      while (!match(merged(seen))) {
        if ((await next()) === null) throw new Error(`the stream ended before ${what}; events: ${JSON.stringify(seen)}`);
      }
      return merged(seen);
    },
  };
}


/** The job as the stream's `job` events built it up: each merged over the previous ones. */
export function merged(seen: Sse[]): Record<string, any> {
  const job: Record<string, any> = {};
  for (const { event, data } of seen) {
    if (event !== 'job') continue;
    Object.assign(job, data.job);
    if (data.timeline) job.timeline = data.timeline;
  }
  return job;
}
