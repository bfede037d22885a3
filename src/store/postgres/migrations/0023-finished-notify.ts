import type { Migration } from '../../migrate.js';

/**
 * Awaited results (issue 32, `baton.waitForResult`), PostgreSQL only: a process awaiting
 * a job's end registers in `finished_listeners` (`finishedListen`, an expiry it renews),
 * and while any registration is live, a statement trigger on `jobs_finished` (every end
 * of a job moves it there) sends NOTIFY `<prefix>_done` with the ids that ended (''
 * when over 500 of them: "read again"). Without a live registration it sends nothing: a
 * NOTIFY takes a lock at commit that serializes committing transactions, which the
 * completion path must not pay when nobody waits. SQLite needs none of this: its WAL
 * watch sees every commit. `_done`, not `_finished`: the channel prefix is sized so that
 * `<prefix>_cancel` fits PostgreSQL's 63-byte names, and pg_notify refuses a longer one.
 */
export const migration: Migration = {
  version: 23,
  name: 'finished-notify',
  sql: `
    CREATE TABLE :schema.finished_listeners (
      owner text PRIMARY KEY,
      expires_at timestamptz NOT NULL
    );
    CREATE FUNCTION :schema.notify_finished() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF EXISTS (SELECT 1 FROM :schema.finished_listeners WHERE expires_at > now()) THEN
        PERFORM pg_notify(':channel_done', (SELECT CASE WHEN count(*) <= 500 THEN coalesce(string_agg(id::text, ','), '') ELSE '' END FROM ended));
      END IF;
      RETURN NULL;
    END $$;
    CREATE TRIGGER jobs_finished_notify AFTER INSERT ON :schema.jobs_finished
      REFERENCING NEW TABLE AS ended FOR EACH STATEMENT EXECUTE FUNCTION :schema.notify_finished();
  `,
};
