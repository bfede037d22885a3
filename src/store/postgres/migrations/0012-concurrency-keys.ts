import type { Migration } from '../../migrate.js';

/**
 * Concurrency keys (issue 12), as SQLite's migration 12: `jobs.concurrency_key` and
 * `concurrency_limit` (in both job tables, and the view `jobs_all` recreated), one row
 * per (queue, key) with live jobs in `concurrency_keys` — queued and running counts kept
 * by a trigger on `jobs` in the transaction of every change, the key's limit (the last
 * enqueue's), when a job of it last started — and keyed queued jobs out of `jobs_claim`
 * into `jobs_claim_keyed`.
 *
 * `claim_jobs` gains a third step. When a served queue has keyed work, it locks up to
 * `p_limit` keys with room and a due job (`FOR UPDATE SKIP LOCKED`: a key another claim
 * holds is passed over, not waited for) in turn order — fewest running first, then the
 * longest since a job of it started, so every key with queued work gets a turn before any
 * gets a second (round-robin; Hatchet's GROUP_ROUND_ROBIN) — and its claim statement, on
 * a snapshot after the lock, takes at most limit − running jobs of each locked key. Every
 * change of a key's running count updates its row, which waits for that lock, so two
 * claims never both see the last place of a key. Jobs are then ranked by turn (a key's
 * running count plus the job's place within the key; an unkeyed job is a key of its own,
 * turn 1), then priority, run_at and id; a queue limit applies on top. With no limited
 * queue and no keyed work the claim is the plain statement it was.
 */
export const migration: Migration = {
  version: 12,
  name: 'concurrency-keys',
  sql: `
    ALTER TABLE :schema.jobs ADD COLUMN concurrency_key text, ADD COLUMN concurrency_limit integer CHECK (concurrency_limit > 0);
    ALTER TABLE :schema.jobs_finished ADD COLUMN concurrency_key text, ADD COLUMN concurrency_limit integer;
    CREATE OR REPLACE VIEW :schema.jobs_all AS SELECT * FROM :schema.jobs UNION ALL SELECT * FROM :schema.jobs_finished;
    CREATE TABLE :schema.concurrency_keys (
      queue text NOT NULL,
      key text NOT NULL,
      queued integer NOT NULL CHECK (queued >= 0),
      running integer NOT NULL CHECK (running >= 0),
      max_running integer,
      last_started_at timestamptz,
      PRIMARY KEY (queue, key)
    );
    CREATE INDEX concurrency_keys_turn ON :schema.concurrency_keys (running, last_started_at NULLS FIRST, key, queue) WHERE queued > 0;
    DROP INDEX :schema.jobs_claim;
    CREATE INDEX jobs_claim ON :schema.jobs (queue, priority, run_at, id) WHERE state = 'queued' AND concurrency_key IS NULL;
    CREATE INDEX jobs_claim_keyed ON :schema.jobs (queue, concurrency_key, priority, run_at, id) WHERE state = 'queued' AND concurrency_key IS NOT NULL;
    CREATE INDEX jobs_running_key ON :schema.jobs (queue, concurrency_key, started_at) WHERE state = 'running' AND concurrency_key IS NOT NULL;
    CREATE FUNCTION :schema.count_concurrency_key() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      q text; k text; lim integer; started timestamptz;
      dq integer := 0; dr integer := 0; left_q integer; left_r integer;
    BEGIN
      IF TG_OP <> 'INSERT' THEN
        q := OLD.queue; k := OLD.concurrency_key;
        dq := dq - (OLD.state = 'queued')::integer; dr := dr - (OLD.state = 'running')::integer;
      END IF;
      IF TG_OP <> 'DELETE' THEN
        q := NEW.queue; k := NEW.concurrency_key; lim := NEW.concurrency_limit;
        dq := dq + (NEW.state = 'queued')::integer; dr := dr + (NEW.state = 'running')::integer;
        IF NEW.state = 'running' THEN started := NEW.started_at; END IF;
      END IF;
      IF dq = 0 AND dr = 0 THEN RETURN NULL; END IF;
      IF TG_OP <> 'DELETE' THEN
        INSERT INTO :schema.concurrency_keys (queue, key, queued, running, max_running) VALUES (q, k, 0, 0, lim) ON CONFLICT (queue, key) DO NOTHING;
      END IF;
      UPDATE :schema.concurrency_keys c SET queued = c.queued + dq, running = c.running + dr,
          max_running = CASE WHEN TG_OP = 'INSERT' THEN lim ELSE c.max_running END,
          last_started_at = coalesce(started, c.last_started_at)
        WHERE c.queue = q AND c.key = k
        RETURNING c.queued, c.running INTO left_q, left_r;
      IF left_q = 0 AND left_r = 0 THEN DELETE FROM :schema.concurrency_keys c WHERE c.queue = q AND c.key = k; END IF;
      RETURN NULL;
    END $$;
    CREATE TRIGGER jobs_key_insert AFTER INSERT ON :schema.jobs
      FOR EACH ROW WHEN (NEW.concurrency_key IS NOT NULL) EXECUTE FUNCTION :schema.count_concurrency_key();
    CREATE TRIGGER jobs_key_state AFTER UPDATE OF state ON :schema.jobs
      FOR EACH ROW WHEN (NEW.concurrency_key IS NOT NULL AND OLD.state <> NEW.state) EXECUTE FUNCTION :schema.count_concurrency_key();
    CREATE TRIGGER jobs_key_delete AFTER DELETE ON :schema.jobs
      FOR EACH ROW WHEN (OLD.concurrency_key IS NOT NULL) EXECUTE FUNCTION :schema.count_concurrency_key();
    CREATE OR REPLACE FUNCTION :schema.claim_jobs(p_now timestamptz, p_queues text[], p_tasks text[], p_limit integer, p_worker text, p_expires timestamptz)
    RETURNS SETOF :schema.jobs LANGUAGE plpgsql VOLATILE AS $$
    DECLARE
      k_queues text[] := '{}';
      k_keys text[] := '{}';
      turn record;
    BEGIN
      PERFORM set_config('synchronous_commit', 'off', true);
      IF NOT EXISTS (SELECT 1 FROM :schema.queues q WHERE q.name = ANY(p_queues) AND q.concurrency IS NOT NULL)
        AND NOT EXISTS (SELECT 1 FROM :schema.jobs j WHERE j.state = 'queued' AND j.concurrency_key IS NOT NULL AND j.queue = ANY(p_queues)) THEN
        -- No served queue has a limit or keyed work: the claim as it was (issue 4), no lock.
        RETURN QUERY
        WITH RECURSIVE prio AS (
          SELECT q.name AS queue, (SELECT priority FROM :schema.jobs WHERE state = 'queued' AND concurrency_key IS NULL AND queue = q.name ORDER BY priority LIMIT 1) AS priority
          FROM unnest(p_queues) AS q(name)
          WHERE NOT EXISTS (SELECT 1 FROM :schema.queues p WHERE p.name = q.name AND p.paused_at IS NOT NULL)
          UNION ALL
          SELECT p.queue, (SELECT priority FROM :schema.jobs WHERE state = 'queued' AND concurrency_key IS NULL AND queue = p.queue AND priority > p.priority ORDER BY priority LIMIT 1)
          FROM prio p WHERE p.priority IS NOT NULL
        ), next AS (
          SELECT c.id FROM prio p CROSS JOIN LATERAL (
            SELECT id, priority, run_at FROM :schema.jobs
            WHERE state = 'queued' AND concurrency_key IS NULL AND queue = p.queue AND priority = p.priority AND run_at <= p_now AND task = ANY(p_tasks)
            ORDER BY run_at, id
            LIMIT p_limit
            FOR UPDATE SKIP LOCKED
          ) c
          ORDER BY c.priority, c.run_at, c.id
          LIMIT p_limit
        )
        UPDATE :schema.jobs j SET state = 'running', attempt = j.attempt + 1, lease_owner = p_worker, lease_expires_at = p_expires,
          lease_token = j.lease_token + 1, started_at = p_now
        WHERE j.id = ANY(ARRAY(SELECT id FROM next)) -- primary-key lookups even in a generic plan
        RETURNING j.*;
        RETURN;
      END IF;
      -- Wait for the claims of limited queues in flight.
      PERFORM 1 FROM :schema.queues q WHERE q.name = ANY(p_queues) AND q.concurrency IS NOT NULL ORDER BY q.name FOR UPDATE;
      -- Take the keys whose turn it is, walking them in turn order (the index
      -- concurrency_keys_turn, read lazily by the loop's cursor) and stopping at p_limit:
      -- a key of a paused queue, without a due job of a served task, or held by another
      -- claim (SKIP LOCKED) is passed over. The lock re-reads the row's latest version.
      FOR turn IN SELECT k.queue, k.key FROM :schema.concurrency_keys k
        WHERE k.queued > 0 AND k.queue = ANY(p_queues) AND (k.max_running IS NULL OR k.running < k.max_running)
        ORDER BY k.running, k.last_started_at NULLS FIRST, k.key, k.queue
      LOOP
        CONTINUE WHEN EXISTS (SELECT 1 FROM :schema.queues p WHERE p.name = turn.queue AND p.paused_at IS NOT NULL);
        CONTINUE WHEN NOT EXISTS (SELECT 1 FROM :schema.jobs j WHERE j.state = 'queued' AND j.concurrency_key = turn.key AND j.queue = turn.queue
          AND j.run_at <= p_now AND j.task = ANY(p_tasks));
        PERFORM 1 FROM :schema.concurrency_keys k WHERE k.queue = turn.queue AND k.key = turn.key
          AND k.queued > 0 AND (k.max_running IS NULL OR k.running < k.max_running) FOR UPDATE SKIP LOCKED;
        CONTINUE WHEN NOT FOUND;
        k_queues := k_queues || turn.queue;
        k_keys := k_keys || turn.key;
        EXIT WHEN cardinality(k_keys) >= p_limit;
      END LOOP;
      RETURN QUERY
      WITH RECURSIVE served AS (
        SELECT s.name AS queue,
          (SELECT l.concurrency - (SELECT count(*) FROM :schema.jobs r WHERE r.state = 'running' AND r.queue = s.name)::integer
           FROM :schema.queues l WHERE l.name = s.name AND l.concurrency IS NOT NULL) AS room
        FROM unnest(p_queues) AS s(name)
        WHERE NOT EXISTS (SELECT 1 FROM :schema.queues p WHERE p.name = s.name AND p.paused_at IS NOT NULL)
      ), prio AS (
        SELECT s.queue, (SELECT j.priority FROM :schema.jobs j WHERE j.state = 'queued' AND j.concurrency_key IS NULL AND j.queue = s.queue ORDER BY j.priority LIMIT 1) AS priority
        FROM served s WHERE s.room IS NULL OR s.room > 0
        UNION ALL
        SELECT p.queue, (SELECT j.priority FROM :schema.jobs j WHERE j.state = 'queued' AND j.concurrency_key IS NULL AND j.queue = p.queue AND j.priority > p.priority ORDER BY j.priority LIMIT 1)
        FROM prio p WHERE p.priority IS NOT NULL
      ), unkeyed AS (
        SELECT c.id, c.priority, c.run_at, p.queue, 1::bigint AS turn FROM prio p CROSS JOIN LATERAL (
          SELECT j.id, j.priority, j.run_at FROM :schema.jobs j
          WHERE j.state = 'queued' AND j.concurrency_key IS NULL AND j.queue = p.queue AND j.priority = p.priority AND j.run_at <= p_now AND j.task = ANY(p_tasks)
          ORDER BY j.run_at, j.id
          LIMIT p_limit
          FOR UPDATE SKIP LOCKED
        ) c
      ), keyed AS (
        SELECT c.id, c.priority, c.run_at, k.queue, k.running + c.n AS turn
        FROM unnest(k_queues, k_keys) AS w(queue, key)
        JOIN :schema.concurrency_keys k ON k.queue = w.queue AND k.key = w.key
        CROSS JOIN LATERAL (
          SELECT t.id, t.priority, t.run_at, row_number() OVER (ORDER BY t.priority, t.run_at, t.id) AS n FROM (
            SELECT j.id, j.priority, j.run_at FROM :schema.jobs j
            WHERE j.state = 'queued' AND j.concurrency_key = k.key AND j.queue = k.queue AND j.run_at <= p_now AND j.task = ANY(p_tasks)
            ORDER BY j.priority, j.run_at, j.id
            LIMIT p_limit
            FOR UPDATE SKIP LOCKED
          ) t
        ) c
        WHERE k.max_running IS NULL OR c.n <= k.max_running - k.running
      ), ranked AS (
        SELECT c.id, c.priority, c.run_at, c.turn, s.room,
          row_number() OVER (PARTITION BY c.queue ORDER BY c.turn, c.priority, c.run_at, c.id) AS n
        FROM (SELECT * FROM unkeyed UNION ALL SELECT * FROM keyed) c JOIN served s ON s.queue = c.queue
      ), next AS (
        SELECT r.id FROM ranked r WHERE r.room IS NULL OR r.n <= r.room ORDER BY r.turn, r.priority, r.run_at, r.id LIMIT p_limit
      )
      UPDATE :schema.jobs j SET state = 'running', attempt = j.attempt + 1, lease_owner = p_worker, lease_expires_at = p_expires,
        lease_token = j.lease_token + 1, started_at = p_now
      WHERE j.id = ANY(ARRAY(SELECT next.id FROM next))
      RETURNING j.*;
    END $$;
  `,
};
