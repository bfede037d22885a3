import { ConfigError } from './errors.js';

/**
 * Baton's optional peer dependencies (package.json `peerDependenciesMeta`): an
 * application installs only the ones it uses — a PostgreSQL service need not
 * compile SQLite, and a compiled app need not ship tsx and esbuild. Each is
 * loaded on first use; `major` is the version the install hint names.
 */
const PEERS = {
  'better-sqlite3': { major: 12, neededBy: 'the SQLite driver' },
  pg: { major: 8, neededBy: 'the PostgreSQL driver' },
  tsx: { major: 4, neededBy: 'a TypeScript tasks file' },
} as const;

export type Peer = keyof typeof PEERS;

/**
 * Runs `load` (a dynamic `import()` of the peer, or of a module of Baton's that
 * imports it) and turns "the peer is not installed" into one line naming it.
 *
 * @example await importPeer('pg', () => import('./postgres/store.js'))
 * @returns what `load` resolves to
 * @throws ConfigError "the SQLite driver needs better-sqlite3: npm install better-sqlite3@12"
 *   when `peer` is missing; any other error of `load` unchanged (a missing package
 *   the peer itself depends on included)
 */
export async function importPeer<T>(peer: Peer, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if (!isMissingPackage(error, peer)) throw error;
    const { major, neededBy } = PEERS[peer];
    throw new ConfigError(`${neededBy} needs ${peer}: npm install ${peer}@${major}`);
  }
}

/** Node's "Cannot find package 'NAME' imported from …" for exactly this package. */
export function isMissingPackage(error: unknown, name: string): boolean {
  return (error as NodeJS.ErrnoException | null)?.code === 'ERR_MODULE_NOT_FOUND' && (error as Error).message.includes(`package '${name}'`);
}
