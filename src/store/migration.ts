/**
 * A schema migration. Files live in `src/store/<driver>/migrations/NNNN-name.ts`,
 * append-only, with the same version numbers on every driver. A `breaking`
 * migration means older code must not run against the new schema; a store refuses
 * to open a database whose schema is newer than the code knows.
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
  breaking?: boolean;
}
