/** What an HTTP app answered: its status and its JSON body. */
export interface JsonAnswer {
  status: number;
  json: Record<string, any>;
}

/**
 * `put(path, body, token)`: a PUT of `body` as JSON to `app` with `Authorization: Bearer
 * <token>` (default `a`, the admin token the tests give), answering status and JSON.
 */
export function jsonPut(app: { request(path: string, init: RequestInit): Response | Promise<Response> }) {
  return async (path: string, body: unknown, token = 'a'): Promise<JsonAnswer> => {
    const response = await app.request(path, { method: 'PUT', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: response.status, json: (await response.json()) as Record<string, any> };
  };
}
