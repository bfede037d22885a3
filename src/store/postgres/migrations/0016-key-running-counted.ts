import type { Migration } from '../../migrate.js';

/**
 * A keyed job's completion no longer writes its key's row (issue 12's keyed drain on
 * PostgreSQL). Until now `concurrency_keys.running` was kept by the claim (+n) and by a
 * statement trigger on every DELETE from `jobs` (−n): the completion's whole extra cost
 * over an unkeyed one (0.8 of 1.9 ms per batch of 50, docs/flow-control.md). Now:
 * - a key's running jobs are counted from the running jobs where a limit is checked:
 *   the walk counts them on its snapshot to pass over keys at their limit, and the claim
 *   statement counts them again on a snapshot taken after the walk locked the key, so it
 *   sees every start of the key committed before (starts still take the key's lock; ends
 *   only lower the count, so an older snapshot can only be too careful);
 * - the row keeps the queued count, the limit and the turn: keys are taken in the order
 *   of their last start (`concurrency_keys_turn` on `last_started_at NULLS FIRST`), the
 *   round-robin of migration 12 without its "fewest running first", which a limit of one
 *   made moot; a row that loses its last queued job to a claim is deleted by that claim,
 *   and a key that comes back with jobs still running gets their latest start as its turn;
 * - the DELETE trigger counts only queued jobs leaving (cancels, deletes); a completion's
 *   batch of running jobs finds nothing to count.
 * The running jobs' two indexes, `jobs_running_queue` (queue) and `jobs_running_key`
 * (queue, key, started_at; keyed jobs only), become one, `jobs_running` (queue, key,
 * started_at): with both, and no statistics (autovacuum off), the planner counted a key's
 * running jobs through `jobs_running_queue`, reading every running job of the queue for
 * each key (0.5 ms a key, 25–55 ms a claim of 50). A queue's count reads its prefix, a
 * key's count stops at the key's limit, and a keyed start writes one index entry, not two.
 * Keys at their limit with queued work are walked past (one index probe each) by every
 * claim until a job of theirs ends: at most one per running keyed job.
 */
export const migration: Migration = {
  version: 16,
  name: 'key-running-counted',
  sql: `
    DELETE FROM :schema.concurrency_keys WHERE queued = 0;
    ALTER TABLE :schema.concurrency_keys DROP COLUMN running;
    DROP INDEX :schema.jobs_running_queue;
    DROP INDEX :schema.jobs_running_key;
    CREATE INDEX jobs_running ON :schema.jobs (queue, concurrency_key, started_at) WHERE state = 'running';
    CREATE INDEX concurrency_keys_turn ON :schema.concurrency_keys (last_started_at NULLS FIRST, key, queue) WHERE queued > 0;
    CREATE OR REPLACE FUNCTION :schema.count_concurrency_key() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      dq integer := (NEW.state = 'queued')::integer;
      left_q integer;
    BEGIN
      IF TG_OP = 'UPDATE' THEN dq := dq - (OLD.state = 'queued')::integer; END IF;
      IF dq = 0 THEN RETURN NULL; END IF;
      UPDATE :schema.concurrency_keys c SET queued = c.queued + dq,
          max_running = CASE WHEN TG_OP = 'INSERT' THEN NEW.concurrency_limit ELSE c.max_running END
        WHERE c.queue = NEW.queue AND c.key = NEW.concurrency_key
        RETURNING c.queued INTO left_q;
      IF NOT FOUND AND dq > 0 THEN
        -- A new key, or one whose last queued job a claim started: its turn is its
        -- latest running job's start. Adds to the row a concurrent first enqueue of the
        -- key may have inserted.
        INSERT INTO :schema.concurrency_keys AS c (queue, key, queued, max_running, last_started_at)
          VALUES (NEW.queue, NEW.concurrency_key, dq, NEW.concurrency_limit, (SELECT max(r.started_at) FROM :schema.jobs r
            WHERE r.state = 'running' AND r.queue = NEW.queue AND r.concurrency_key = NEW.concurrency_key))
          ON CONFLICT (queue, key) DO UPDATE SET queued = c.queued + dq,
            max_running = CASE WHEN TG_OP = 'INSERT' THEN NEW.concurrency_limit ELSE c.max_running END;
      ELSIF left_q = 0 THEN
        DELETE FROM :schema.concurrency_keys c WHERE c.queue = NEW.queue AND c.key = NEW.concurrency_key AND c.queued = 0;
      END IF;
      RETURN NULL;
    END $$;
    CREATE OR REPLACE FUNCTION :schema.count_concurrency_keys_gone() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      g_queues text[]; g_keys text[]; g_queued integer[];
    BEGIN
      SELECT array_agg(queue ORDER BY queue, key), array_agg(key ORDER BY queue, key), array_agg(queued ORDER BY queue, key)
        INTO g_queues, g_keys, g_queued
        FROM (SELECT o.queue, o.concurrency_key AS key, count(*)::integer AS queued
          FROM gone_jobs o WHERE o.concurrency_key IS NOT NULL AND o.state = 'queued' GROUP BY 1, 2) g;
      IF g_keys IS NULL THEN RETURN NULL; END IF;
      -- Keys locked in (queue, key) order: two statements ending queued jobs of the same
      -- keys cannot deadlock.
      PERFORM 1 FROM :schema.concurrency_keys c JOIN unnest(g_queues, g_keys) AS g(queue, key) ON c.queue = g.queue AND c.key = g.key
        ORDER BY c.queue, c.key FOR UPDATE OF c;
      UPDATE :schema.concurrency_keys c SET queued = c.queued - g.queued
        FROM unnest(g_queues, g_keys, g_queued) AS g(queue, key, queued)
        WHERE c.queue = g.queue AND c.key = g.key;
      DELETE FROM :schema.concurrency_keys c USING unnest(g_queues, g_keys) AS g(queue, key)
        WHERE c.queue = g.queue AND c.key = g.key AND c.queued = 0;
      RETURN NULL;
    END $$;
    DROP TRIGGER jobs_key_insert ON :schema.jobs;
    CREATE TRIGGER jobs_key_insert AFTER INSERT ON :schema.jobs
      FOR EACH ROW WHEN (NEW.concurrency_key IS NOT NULL AND NEW.state = 'queued') EXECUTE FUNCTION :schema.count_concurrency_key();
    DROP TRIGGER jobs_key_state ON :schema.jobs;
    CREATE TRIGGER jobs_key_state AFTER UPDATE OF state ON :schema.jobs
      FOR EACH ROW WHEN (NEW.concurrency_key IS NOT NULL AND (OLD.state = 'queued') <> (NEW.state = 'queued') AND NOT (OLD.state = 'queued' AND NEW.state = 'running'))
      EXECUTE FUNCTION :schema.count_concurrency_key();
    CREATE OR REPLACE FUNCTION :schema.claim_jobs(p_now timestamptz, p_queues text[], p_tasks text[], p_limit integer, p_worker text, p_expires timestamptz)
    RETURNS SETOF :schema.jobs LANGUAGE plpgsql VOLATILE AS $$
    DECLARE
      k_queues text[] := '{}';
      k_keys text[] := '{}';
      k_rooms integer[] := '{}';
      turn record;
      k_paused boolean;
      k_queue text;
      k_rate integer;
      k_period integer;
      k_room integer;
      k_sort text;
    BEGIN
      PERFORM set_config('synchronous_commit', 'off', true);
      -- A claim is a short statement JIT never pays for: without statistics the key walk's
      -- estimate passes jit_above_cost, and compiling it took 10-40 ms of a 1 ms claim.
      PERFORM set_config('jit', 'off', true);
      IF NOT EXISTS (SELECT 1 FROM :schema.queues q WHERE q.name = ANY(p_queues) AND (q.concurrency IS NOT NULL OR q.rate_limit IS NOT NULL))
        AND NOT EXISTS (SELECT 1 FROM :schema.jobs j WHERE j.state = 'queued' AND j.concurrency_key IS NOT NULL AND j.queue = ANY(p_queues)) THEN
        -- No served queue has a limit, a rate limit or keyed work: the claim as it was (issue 4), no lock.
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
      -- Wait for the claims in flight of queues with a limit or a rate limit.
      PERFORM 1 FROM :schema.queues q WHERE q.name = ANY(p_queues) AND (q.concurrency IS NOT NULL OR q.rate_limit IS NOT NULL) ORDER BY q.name FOR UPDATE;
      -- Take the keys whose turn it is, walking them in turn order (the index
      -- concurrency_keys_turn, read lazily) and stopping at p_limit: a key of a paused
      -- queue, without a due job of a served task, or held by another claim (SKIP LOCKED)
      -- is passed over. The lock re-reads the row's latest version.
      -- Without statistics (a fresh table, autovacuum off) the planner sorts every waiting
      -- key instead of reading concurrency_keys_turn in order: forbid the sort for the walk.
      k_sort := current_setting('enable_sort');
      PERFORM set_config('enable_sort', 'off', true);
      IF NOT EXISTS (SELECT 1 FROM :schema.queues q WHERE q.name = ANY(p_queues) AND q.key_rate_limit IS NOT NULL) THEN
        -- No per-key rate: one statement takes the keys.
        SELECT coalesce(array_agg(w.queue), '{}'), coalesce(array_agg(w.key), '{}'), coalesce(array_agg(NULL::integer), '{}')
          INTO k_queues, k_keys, k_rooms
          FROM (SELECT k.queue, k.key FROM :schema.concurrency_keys k
            WHERE k.queued > 0 AND k.queue = ANY(p_queues)
              -- on this statement's snapshot: the claim statement below counts again after the lock
              AND (k.max_running IS NULL OR (SELECT count(*) FROM (SELECT FROM :schema.jobs r WHERE r.state = 'running' AND r.queue = k.queue AND r.concurrency_key = k.key
              LIMIT k.max_running) r)::integer < k.max_running)
              -- scalar subqueries, not EXISTS: without statistics the planner turns an
              -- EXISTS into a join that reads every queued keyed job (3.3 ms, against 0.3)
              AND (SELECT p.paused_at IS NULL FROM :schema.queues p WHERE p.name = k.queue) IS NOT FALSE
              AND (SELECT true FROM :schema.jobs j WHERE j.state = 'queued' AND j.concurrency_key = k.key AND j.queue = k.queue
                AND j.run_at <= p_now AND j.task = ANY(p_tasks) LIMIT 1)
            ORDER BY k.last_started_at NULLS FIRST, k.key, k.queue
            LIMIT p_limit
            FOR UPDATE OF k SKIP LOCKED) w;
      ELSE
        -- A per-key rate: a key's room is counted after its lock, in a statement of its
        -- own, so it sees every start of the key a claim before this one committed.
        FOR turn IN SELECT k.queue, k.key FROM :schema.concurrency_keys k
          WHERE k.queued > 0 AND k.queue = ANY(p_queues) AND (k.max_running IS NULL OR (SELECT count(*) FROM (SELECT FROM :schema.jobs r WHERE r.state = 'running' AND r.queue = k.queue AND r.concurrency_key = k.key
              LIMIT k.max_running) r)::integer < k.max_running)
          ORDER BY k.last_started_at NULLS FIRST, k.key, k.queue
        LOOP
          IF k_queue IS DISTINCT FROM turn.queue THEN
            k_queue := turn.queue;
            SELECT p.paused_at IS NOT NULL, p.key_rate_limit, p.key_rate_period_ms INTO k_paused, k_rate, k_period FROM :schema.queues p WHERE p.name = turn.queue;
          END IF;
          CONTINUE WHEN k_paused;
          k_room := NULL;
          PERFORM 1 FROM :schema.concurrency_keys k WHERE k.queue = turn.queue AND k.key = turn.key
            AND k.queued > 0
            AND EXISTS (SELECT 1 FROM :schema.jobs j WHERE j.state = 'queued' AND j.concurrency_key = turn.key AND j.queue = turn.queue
              AND j.run_at <= p_now AND j.task = ANY(p_tasks))
            FOR UPDATE OF k SKIP LOCKED;
          CONTINUE WHEN NOT FOUND;
          -- The key's running jobs, counted after its lock (every start of it committed).
          CONTINUE WHEN (SELECT k.max_running IS NOT NULL AND (SELECT count(*) FROM (SELECT FROM :schema.jobs r WHERE r.state = 'running' AND r.queue = k.queue AND r.concurrency_key = k.key
              LIMIT k.max_running) r)::integer >= k.max_running
            FROM :schema.concurrency_keys k WHERE k.queue = turn.queue AND k.key = turn.key);
          -- The key's rate room, counted after its lock: every start of the key recorded
          -- by a claim before this one has committed.
          IF k_rate IS NOT NULL THEN
            k_room := k_rate - (SELECT count(*) FROM :schema.rate_limit_starts s WHERE s.queue = turn.queue AND s.key = turn.key
              AND s.started_at > p_now - k_period * interval '1 millisecond')::integer;
            CONTINUE WHEN k_room <= 0;
          END IF;
          k_queues := k_queues || turn.queue;
          k_keys := k_keys || turn.key;
          k_rooms := k_rooms || k_room;
          EXIT WHEN cardinality(k_keys) >= p_limit;
        END LOOP;
      END IF;
      PERFORM set_config('enable_sort', k_sort, true);
      RETURN QUERY
      WITH RECURSIVE served AS (
        SELECT s.name AS queue,
          (SELECT least(
              l.concurrency - (SELECT count(*) FROM :schema.jobs r WHERE r.state = 'running' AND r.queue = s.name)::integer,
              l.rate_limit - (SELECT count(*) FROM :schema.rate_limit_starts t WHERE t.queue = s.name
                AND t.started_at > p_now - l.rate_period_ms * interval '1 millisecond')::integer)
           FROM :schema.queues l WHERE l.name = s.name AND (l.concurrency IS NOT NULL OR l.rate_limit IS NOT NULL)) AS room
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
        SELECT c.id, c.priority, c.run_at, k.queue, r.running + c.n AS turn
        FROM unnest(k_queues, k_keys, k_rooms) AS w(queue, key, room)
        JOIN :schema.concurrency_keys k ON k.queue = w.queue AND k.key = w.key
        -- The key's running jobs counted on this statement's snapshot, taken after the
        -- walk locked the key: every claim of it before has committed.
        CROSS JOIN LATERAL (SELECT count(*)::integer AS running FROM (SELECT FROM :schema.jobs r
          WHERE r.state = 'running' AND r.queue = k.queue AND r.concurrency_key = k.key LIMIT k.max_running) r) r
        CROSS JOIN LATERAL (
          SELECT t.id, t.priority, t.run_at, row_number() OVER (ORDER BY t.priority, t.run_at, t.id) AS n FROM (
            SELECT j.id, j.priority, j.run_at FROM :schema.jobs j
            WHERE j.state = 'queued' AND j.concurrency_key = k.key AND j.queue = k.queue AND j.run_at <= p_now AND j.task = ANY(p_tasks)
            ORDER BY j.priority, j.run_at, j.id
            LIMIT p_limit
            FOR UPDATE SKIP LOCKED
          ) t
        ) c
        WHERE (k.max_running IS NULL OR c.n <= k.max_running - r.running) AND (w.room IS NULL OR c.n <= w.room)
      ), ranked AS (
        SELECT c.id, c.priority, c.run_at, c.turn, s.room,
          row_number() OVER (PARTITION BY c.queue ORDER BY c.turn, c.priority, c.run_at, c.id) AS n
        FROM (SELECT * FROM unkeyed UNION ALL SELECT * FROM keyed) c JOIN served s ON s.queue = c.queue
      ), next AS (
        SELECT r.id FROM ranked r WHERE r.room IS NULL OR r.n <= r.room ORDER BY r.turn, r.priority, r.run_at, r.id LIMIT p_limit
      ), claimed AS (
        UPDATE :schema.jobs j SET state = 'running', attempt = j.attempt + 1, lease_owner = p_worker, lease_expires_at = p_expires,
          lease_token = j.lease_token + 1, started_at = p_now
        WHERE j.id = ANY(ARRAY(SELECT next.id FROM next))
        RETURNING j.*
      ), recorded AS (
        -- The starts a rate limit counts: every start in a queue with a rate limit, and
        -- every keyed start in a queue with a per-key rate limit.
        INSERT INTO :schema.rate_limit_starts (queue, key, started_at)
        SELECT c.queue, c.concurrency_key, p_now FROM claimed c JOIN :schema.queues q ON q.name = c.queue
        WHERE q.rate_limit IS NOT NULL OR (q.key_rate_limit IS NOT NULL AND c.concurrency_key IS NOT NULL)
      ), started AS (
        SELECT s.queue, s.concurrency_key AS key, count(*)::integer AS n FROM claimed s WHERE s.concurrency_key IS NOT NULL GROUP BY 1, 2
      ), counted AS (
        -- The claimed keys' queued counts and turn, which jobs_key_state leaves to the
        -- claim: each key's row is locked by the walk above. A key whose last queued job
        -- this claim started has its row deleted.
        UPDATE :schema.concurrency_keys k SET queued = k.queued - c.n, last_started_at = p_now
        FROM started c WHERE k.queue = c.queue AND k.key = c.key AND k.queued > c.n
      ), emptied AS (
        DELETE FROM :schema.concurrency_keys k USING started c WHERE k.queue = c.queue AND k.key = c.key AND k.queued <= c.n
      )
      SELECT * FROM claimed;
    END $$;
  `,
};
