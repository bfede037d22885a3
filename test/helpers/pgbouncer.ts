import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { ChildHandle } from './child.js';

/** Debian's PgBouncer (package pgbouncer, 1.18 on bookworm; .ci/run installs it). */
export const PGBOUNCER = '/usr/sbin/pgbouncer';

/** True when {@link PGBOUNCER} is installed. */
export const pgbouncerInstalled = existsSync(PGBOUNCER);

/** A port on 127.0.0.1 that nothing listened on a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** A running PgBouncer: its URL for `database`, and its log so far (stderr). */
export interface PgBouncer {
  /** `postgres://user@127.0.0.1:PORT/db`: the upstream's database through the bouncer. */
  url: string;
  /** What PgBouncer logged so far. */
  log(): string;
  /** Stops it (SIGTERM) and waits for its exit; also done after the test. */
  stop(): Promise<void>;
}

const running = new Set<PgBouncer>();
afterEach(async () => {
  for (const bouncer of [...running]) await bouncer.stop();
});

/**
 * Starts PgBouncer in transaction pooling mode in front of `upstream` (a
 * `postgres://user@host:port/db` URL with trust authentication), on a free port of
 * 127.0.0.1, with a config in a temp directory; it is stopped after the test.
 * PgBouncer refuses to run as root: as root it is started with `-u postgres` (the
 * temp directory is made readable to that user).
 * @param options.poolSize - server connections per database and user (default_pool_size)
 * @throws when PgBouncer exits before it listens, or does not listen within 60 s
 */
export async function startPgBouncer(upstream: string, options: { poolSize: number }): Promise<PgBouncer> {
  const target = new URL(upstream);
  const db = target.pathname.slice(1);
  const user = decodeURIComponent(target.username);
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'baton-pgbouncer-'));
  chmodSync(dir, 0o755);
  const config = join(dir, 'pgbouncer.ini');
  writeFileSync(join(dir, 'users.txt'), `"${user}" ""\n`, { mode: 0o644 });
  writeFileSync(
    config,
    [
      '[databases]',
      `${db} = host=${target.hostname} port=${target.port || 5432} dbname=${db}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'users.txt')}`,
      'pool_mode = transaction',
      `default_pool_size = ${options.poolSize}`,
      'max_client_conn = 500',
      '',
    ].join('\n'),
    { mode: 0o644 },
  );
  const asRoot = process.getuid?.() === 0;
  const child = new ChildHandle(spawn(PGBOUNCER, [...(asRoot ? ['-u', 'postgres'] : []), config], { stdio: ['ignore', 'pipe', 'pipe'] }));
  let stopping: Promise<void> | undefined;
  const bouncer: PgBouncer = {
    url: `postgres://${encodeURIComponent(user)}@127.0.0.1:${port}/${db}`,
    log: () => child.stderr,
    stop() {
      stopping ??= (async () => {
        running.delete(bouncer);
        if (child.process.exitCode === null && child.process.signalCode === null) child.kill('SIGTERM');
        await child.exited;
        rmSync(dir, { recursive: true, force: true });
      })();
      return stopping;
    },
  };
  running.add(bouncer);
  await waitForLog(child, `listening on 127.0.0.1:${port}`);
  return bouncer;
}

/** Resolves once the child's stderr holds `text`; rejects when it exits first or after 60 s. */
function waitForLog(child: ChildHandle, text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => finish(new Error(`PgBouncer did not log "${text}" within 60 s:\n${child.stderr}`)), 60_000);
    const check = () => {
      if (child.stderr.includes(text)) finish();
    };
    const finish = (error?: Error) => {
      clearTimeout(timer);
      child.process.stderr!.off('data', check);
      if (error) reject(error);
      else resolve();
    };
    child.process.stderr!.on('data', check);
    void child.exited.then(() => finish(new Error(`PgBouncer exited before listening:\n${child.stderr}`)));
    check();
  });
}
