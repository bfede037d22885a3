import type { Migration } from '../../migrate.js';

/**
 * Jobs table, claim/lease/key indexes, and the triggers that wake workers:
 * NOTIFY `<schema>_jobs` when a job becomes queued (sent at commit, so a job
 * enqueued inside a rolled-back transaction wakes nobody), and `<schema>_cancel`
 * with `{"id", "reason"}` (JSON; the reason cut at 2,000 characters) when a running
 * job gets a cancel request.
 * `:schema` is replaced by the quoted schema name, `:channel` by its unquoted name.
 */
export const migration: Migration = {
  version: 1,
  name: 'jobs',
  sql: `
    CREATE TABLE :schema.jobs (
      id bigserial PRIMARY KEY,
      queue text NOT NULL,
      task text NOT NULL,
      payload json NOT NULL,
      state text NOT NULL CHECK (state IN ('queued','running','completed','failed','cancelled')),
      priority integer NOT NULL DEFAULT 0,
      run_at timestamptz NOT NULL,
      attempt integer NOT NULL DEFAULT 0,
      max_attempts integer NOT NULL,
      timeout_ms integer,
      key text,
      progress jsonb,
      checkpoint json,
      result json,
      errors jsonb NOT NULL DEFAULT '[]',
      cancel_requested_at timestamptz,
      cancel_reason text,
      created_at timestamptz NOT NULL,
      started_at timestamptz,
      finished_at timestamptz,
      lease_owner text,
      lease_expires_at timestamptz,
      lease_token integer NOT NULL DEFAULT 0
    );
    CREATE INDEX jobs_claim ON :schema.jobs (queue, priority, run_at, id) WHERE state = 'queued';
    CREATE INDEX jobs_lease ON :schema.jobs (lease_expires_at) WHERE state = 'running';
    CREATE UNIQUE INDEX jobs_key ON :schema.jobs (key) WHERE key IS NOT NULL AND state IN ('queued','running');
    CREATE INDEX jobs_state ON :schema.jobs (state, id);

    CREATE FUNCTION :schema.notify_queued() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify(':channel_jobs', '');
      RETURN NULL;
    END $$;
    CREATE TRIGGER jobs_inserted AFTER INSERT ON :schema.jobs
      FOR EACH STATEMENT EXECUTE FUNCTION :schema.notify_queued();
    CREATE TRIGGER jobs_requeued AFTER UPDATE OF state ON :schema.jobs
      FOR EACH ROW WHEN (NEW.state = 'queued' AND OLD.state <> 'queued') EXECUTE FUNCTION :schema.notify_queued();

    CREATE FUNCTION :schema.notify_cancel() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify(':channel_cancel', json_build_object('id', NEW.id, 'reason', left(NEW.cancel_reason, 2000))::text);
      RETURN NULL;
    END $$;
    CREATE TRIGGER jobs_cancel_requested AFTER UPDATE OF cancel_requested_at ON :schema.jobs
      FOR EACH ROW WHEN (NEW.state = 'running' AND OLD.cancel_requested_at IS NULL AND NEW.cancel_requested_at IS NOT NULL)
      EXECUTE FUNCTION :schema.notify_cancel();
  `,
};
