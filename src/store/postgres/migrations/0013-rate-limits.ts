import type { Migration } from '../../migrate.js';

/**
 * Rate limits (issue 12), as SQLite's migration 13: `queues.rate_limit` starts per
 * `rate_period_ms` for the whole queue, `queues.key_rate_limit` starts per
 * `key_rate_period_ms` for each concurrency key of the queue (NULL: none), and
 * `rate_limit_starts`, one row per start the limits count (queue, key, when), which is
 * the sliding window's log: a claim at `now` may start `limit` − (starts after
 * now − period) jobs. A sliding log rather than a token bucket or fixed windows, because
 * it is the only one of the three under which no window of `period` ever holds more than
 * `limit` starts (a bucket of `limit` tokens lets 2 × limit through across a refill; a
 * fixed window, 2 × limit across its boundary); its cost is one index entry per start,
 * and counting at most `limit` of them per claim.
 *
 * Exactness. A queue with a rate limit has its row locked by every claim of it, as a
 * concurrency limit does (migration 11), so the count, read by a later statement of the
 * function, sees every start before it. A per-key rate is counted after the claim has
 * locked the key's row (migration 12), the same argument per key. The log is written by
 * the claim itself (a data-modifying CTE on the claimed rows), so a start and its record
 * commit together. Rows older than the longest period of their queue are deleted by the
 * pruner (rateStartsPrune). Changing a rate NOTIFYs `<schema>_jobs` so waiting workers
 * claim at once.
 */
export const migration: Migration = {
  version: 13,
  name: 'rate-limits',
  sql: `
    ALTER TABLE :schema.queues
      ADD COLUMN rate_limit integer CHECK (rate_limit > 0),
      ADD COLUMN rate_period_ms integer CHECK (rate_period_ms > 0),
      ADD COLUMN key_rate_limit integer CHECK (key_rate_limit > 0),
      ADD COLUMN key_rate_period_ms integer CHECK (key_rate_period_ms > 0),
      ADD CHECK ((rate_limit IS NULL) = (rate_period_ms IS NULL)),
      ADD CHECK ((key_rate_limit IS NULL) = (key_rate_period_ms IS NULL));
    CREATE TABLE :schema.rate_limit_starts (
      queue text NOT NULL,
      key text,
      started_at timestamptz NOT NULL
    );
    CREATE INDEX rate_limit_starts_queue ON :schema.rate_limit_starts (queue, started_at);
    CREATE INDEX rate_limit_starts_key ON :schema.rate_limit_starts (queue, key, started_at) WHERE key IS NOT NULL;
    CREATE TRIGGER queues_rate_changed AFTER UPDATE OF rate_limit, rate_period_ms, key_rate_limit, key_rate_period_ms ON :schema.queues
      FOR EACH ROW EXECUTE FUNCTION :schema.notify_queued();
    CREATE OR REPLACE FUNCTION :schema.claim_jobs(p_now timestamptz, p_queues text[], p_tasks text[], p_limit integer, p_worker text, p_expires timestamptz)
    RETURNS SETOF :schema.jobs LANGUAGE plpgsql VOLATILE AS $$
    DECLARE
      k_queues text[] := '{}';
      k_keys text[] := '{}';
      k_rooms integer[] := '{}';
      turn record;
      k_paused boolean;
      k_rate integer;
      k_period integer;
      k_room integer;
      k_sort text;
    BEGIN
      PERFORM set_config('synchronous_commit', 'off', true);
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
      -- concurrency_keys_turn, read lazily by the loop's cursor) and stopping at p_limit:
      -- a key of a paused queue, without a due job of a served task, or held by another
      -- claim (SKIP LOCKED) is passed over. The lock re-reads the row's latest version.
      -- Without statistics (a fresh table, autovacuum off) the planner sorts every waiting
      -- key instead of reading concurrency_keys_turn in order: forbid the sort for the walk.
      k_sort := current_setting('enable_sort');
      PERFORM set_config('enable_sort', 'off', true);
      FOR turn IN SELECT k.queue, k.key FROM :schema.concurrency_keys k
        WHERE k.queued > 0 AND k.queue = ANY(p_queues) AND (k.max_running IS NULL OR k.running < k.max_running)
        ORDER BY k.running, k.last_started_at NULLS FIRST, k.key, k.queue
      LOOP
        k_paused := false; k_rate := NULL; k_period := NULL; k_room := NULL;
        SELECT p.paused_at IS NOT NULL, p.key_rate_limit, p.key_rate_period_ms INTO k_paused, k_rate, k_period FROM :schema.queues p WHERE p.name = turn.queue;
        CONTINUE WHEN k_paused;
        CONTINUE WHEN NOT EXISTS (SELECT 1 FROM :schema.jobs j WHERE j.state = 'queued' AND j.concurrency_key = turn.key AND j.queue = turn.queue
          AND j.run_at <= p_now AND j.task = ANY(p_tasks));
        PERFORM 1 FROM :schema.concurrency_keys k WHERE k.queue = turn.queue AND k.key = turn.key
          AND k.queued > 0 AND (k.max_running IS NULL OR k.running < k.max_running) FOR UPDATE SKIP LOCKED;
        CONTINUE WHEN NOT FOUND;
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
        SELECT c.id, c.priority, c.run_at, k.queue, k.running + c.n AS turn
        FROM unnest(k_queues, k_keys, k_rooms) AS w(queue, key, room)
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
        WHERE (k.max_running IS NULL OR c.n <= k.max_running - k.running) AND (w.room IS NULL OR c.n <= w.room)
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
      )
      SELECT * FROM claimed;
    END $$;
  `,
};
