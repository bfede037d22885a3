import { openStore } from '../../src/store/open.js';
import { tempDatabase, testDriver } from '../helpers/db.js';
import { describeStore } from './describe-store.js';

// The driver of this vitest project (BATON_TEST_DRIVER): a temp SQLite file per
// test, or a PostgreSQL schema per test (dropped after it).
describeStore(testDriver, {
  database: () => tempDatabase().url,
  open: (url) => openStore(url),
});
