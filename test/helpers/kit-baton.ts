import { join } from 'node:path';
import { afterEach } from 'vitest';
import type { Baton } from 'baton-jobs';
import { createKit } from '../fixtures/kit.js';
import { openBaton, tempDatabase } from './db.js';
import type { Ledger } from './ledger.js';

const ledgers: Ledger[] = [];
afterEach(() => {
  for (const ledger of ledgers.splice(0)) ledger.close();
});

/**
 * A Baton on a fresh database plus the handler kit writing to a ledger file next
 * to it (`ledgerPath`, to hand to worker processes too). Closed after the test.
 */
export async function openKitBaton() {
  const db = tempDatabase();
  const ledgerPath = join(db.dir, 'ledger.db');
  let baton: Baton | undefined;
  const kit = createKit({ ledgerPath, baton: () => baton! });
  ledgers.push(kit.ledger!);
  baton = await openBaton({ database: db.url });
  return { db, baton, kit, ledger: kit.ledger!, ledgerPath };
}
