import type { Context } from 'hono';
import { PayloadTooLargeError } from '../errors.js';
import { HttpError } from './problem.js';

/**
 * Reads a request body as JSON, refusing more than `limit` bytes before reading
 * them all (Content-Length checked first, then the stream counted). An empty
 * body reads as `{}`.
 * @throws PayloadTooLargeError (413); HttpError bad_json (400)
 */
export async function readJson(c: Context, limit: number): Promise<unknown> {
  const declared = Number(c.req.header('content-length'));
  if (Number.isFinite(declared) && declared > limit) throw new PayloadTooLargeError('request body', declared, limit);
  const body = c.req.raw.body;
  if (!body) return {};
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      throw new PayloadTooLargeError('request body', size, limit);
    }
    chunks.push(value);
  }
  if (size === 0) return {};
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks));
  } catch {
    throw new HttpError('bad_json', 'request body is not valid UTF-8');
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new HttpError('bad_json', `request body is not valid JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
}
