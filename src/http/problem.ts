import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { BatonError, ConflictError, ValidationError, brand } from '../errors.js';

/**
 * Errors → HTTP answers. Every error is JSON `{ "error": { "code", "message" } }`
 * (plus `issues` for validation and `state` for conflicts). Statuses by code:
 *
 * | code | status |
 * |---|---|
 * | validation, config, bad_json, aborted | 400 |
 * | unauthorized | 401 |
 * | forbidden | 403 |
 * | not_found | 404 |
 * | method_not_allowed | 405 (with `Allow`) |
 * | conflict, lock_busy, job_failed, job_cancelled | 409 |
 * | payload_too_large, response_too_large | 413 |
 * | unsupported_media_type | 415 |
 * | store | 503 (the database cannot be reached) |
 * | busy | 503 (a capacity is full, e.g. `GET /api/events`' clients) |
 * | anything else | 500 (a bug: never for client input) |
 */
export const STATUS_BY_CODE: Record<string, ContentfulStatusCode> = {
  validation: 400,
  config: 400,
  bad_json: 400,
  aborted: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  lock_busy: 409,
  job_failed: 409,
  job_cancelled: 409,
  payload_too_large: 413,
  response_too_large: 413,
  unsupported_media_type: 415,
  store: 503,
  busy: 503,
};

/** An error of the HTTP layer itself (auth, content type, body) with its code. */
export class HttpError extends BatonError {}
brand(HttpError, 'HttpError');

/** The JSON body and status for `error`. */
export function problem(error: unknown): { status: ContentfulStatusCode; body: { error: Record<string, unknown> } } {
  if (error instanceof BatonError) {
    const status = STATUS_BY_CODE[error.code] ?? 500;
    const body: Record<string, unknown> = { code: error.code, message: error.message };
    if (error instanceof ValidationError && error.issues.length > 0) body.issues = error.issues;
    if (error instanceof ConflictError && error.state !== undefined) body.state = error.state;
    return { status, body: { error: body } };
  }
  return { status: 500, body: { error: { code: 'internal', message: 'internal error' } } };
}

/** Answers `error` as JSON. */
export function problemResponse(c: Context, error: unknown): Response {
  const { status, body } = problem(error);
  return c.json(body, status);
}
