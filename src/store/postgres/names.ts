import { createHash } from 'node:crypto';

/**
 * Names PostgreSQL keeps per schema or connection, kept within its 63-byte limit
 * (NAMEDATALEN − 1). A longer name is silently truncated by the server, so two
 * names sharing their first 63 bytes would collide.
 */

/** PostgreSQL's longest identifier, in bytes. */
export const MAX_IDENTIFIER = 63;

const hash = (text: string, length: number) => createHash('sha256').update(text).digest('hex').slice(0, length);

/**
 * The server-side name of a prepared statement: `baton_<label>_<12 hex of a
 * SHA-256 of the statement text>`. The text carries the schema, so two stores on
 * different schemas (or two versions of one statement) never share a name, and
 * the name stays short whatever the schema's length.
 * @param label - a short word naming the statement ("claim", "lease_get"), at most 40 characters
 * @param text - the statement as sent (schema filled in)
 */
export function statementName(label: string, text: string): string {
  return `baton_${label.slice(0, 40)}_${hash(text, 12)}`;
}

/**
 * The prefix of the NOTIFY channels of a schema (`<prefix>_jobs`, `<prefix>_cancel`):
 * the schema's own name when `<schema>_cancel` fits in 63 bytes (every schema up
 * to 56 characters, so existing databases keep their channels), else
 * `baton_<16 hex of a SHA-256 of the schema name>`.
 */
export function channelPrefix(schema: string): string {
  return Buffer.byteLength(`${schema}_cancel`) <= MAX_IDENTIFIER ? schema : `baton_${hash(schema, 16)}`;
}
