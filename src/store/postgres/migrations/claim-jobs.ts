/**
 * The claim, `claim_jobs(now, queues, tasks, limit, worker, expires)`: the jobs it
 * starts, as `jobs` rows. One round trip, exact under concurrent claimers. Part of the
 * baseline migration (0024-baseline.ts), the one place it is defined; see
 * docs/development.md for how a later migration changes it.
 *
 * Why a function: a statement reads one snapshot, taken before it waited for a lock, so
 * a count in it cannot see the jobs another claimer started meanwhile and could go over
 * a limit. In a VOLATILE plpgsql function each statement takes a new snapshot.
 *
 * - No served queue has a concurrency limit, a rate limit or keyed work: one plain
 *   statement, no lock (a loose scan of the served queues' priorities, a range scan per
 *   (queue, priority) bounded by run_at <= now, then the best `p_limit`). One statement
 *   for both cases measured slower (claims of 2.1-2.3 ms instead of 1.0-1.3 ms at
 *   concurrency 10, cause not found), so the plain path stays.
 * - Otherwise, first the rows of the served queues with a limit or a rate are locked, in
 *   name order (two claimers never deadlock), which waits for the claims of them in
 *   flight to commit. Then the walk takes up to `p_limit` concurrency keys in turn order
 *   (`concurrency_keys_turn`: the longest since a job of the key started first, so every
 *   key with queued work gets a turn before any gets a second), locking each `FOR UPDATE
 *   SKIP LOCKED` (a key another claim holds is passed over, not waited for) and passing
 *   over keys at their limit (running jobs counted from `jobs_running`), of a paused
 *   queue, or without a due job of a served task; it returns each key's limit from the
 *   row it locked, so the claim statement needs no join back to `concurrency_keys` (the
 *   planner hashed the whole table for one: 10,000 keys read per claim). With a per-key
 *   rate the walk is a loop, counting each key's rate room after its lock. Last, the
 *   claim statement, on a snapshot taken after those locks: a queue's room is its limit
 *   less its running jobs and its rate less its starts in the window; a key's is its
 *   limit less its running jobs (counted again) and its rate room, and no more of its
 *   jobs are locked than that. Jobs are ranked by turn (a key's running jobs plus the
 *   job's place within the key; an unkeyed job is a key of its own, turn 1), then
 *   priority, run_at, id.
 * - Rates are sliding logs: the claim writes a row to `rate_limit_starts` per start a
 *   rate counts, in the statement that starts it, so a start and its record commit
 *   together. Unlike a token bucket or fixed windows (2 x limit across a refill or a
 *   boundary), no window of `period` ever holds more than `limit` starts.
 * - The claim keeps the claimed keys' queued counts and turns itself (the row trigger
 *   `jobs_key_state` leaves queued -> running to it), deleting a key's row when it starts
 *   the key's last queued job.
 * - `synchronous_commit` is off for its transaction (ASYNC_COMMIT in context.ts), JIT too
 *   (compiling the walk took 10-40 ms of a 1 ms claim), and sorting during the walk, which
 *   without statistics sorted every waiting key instead of reading the index in order.
 */
export const claimJobs = `
    CREATE FUNCTION :schema.claim_jobs(p_now timestamptz, p_queues text[], p_tasks text[], p_limit integer, p_worker text, p_expires timestamptz)
    RETURNS SETOF :schema.jobs LANGUAGE plpgsql VOLATILE AS $$
    DECLARE
      k_queues text[] := '{}';
      k_keys text[] := '{}';
      k_rooms integer[] := '{}';
      k_limits integer[] := '{}';
      turn record;
      k_paused boolean;
      k_queue text;
      k_rate integer;
      k_period integer;
      k_room integer;
      k_limit integer;
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
        -- The limit is read from the locked row (its latest version): an enqueue that would
        -- change it waits for this claim's commit.
        SELECT coalesce(array_agg(w.queue), '{}'), coalesce(array_agg(w.key), '{}'), coalesce(array_agg(NULL::integer), '{}'), coalesce(array_agg(w.max_running), '{}')
          INTO k_queues, k_keys, k_rooms, k_limits
          FROM (SELECT k.queue, k.key, k.max_running FROM :schema.concurrency_keys k
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
          k_limit := (SELECT k.max_running FROM :schema.concurrency_keys k WHERE k.queue = turn.queue AND k.key = turn.key);
          CONTINUE WHEN k_limit IS NOT NULL AND (SELECT count(*) FROM (SELECT FROM :schema.jobs r WHERE r.state = 'running' AND r.queue = turn.queue AND r.concurrency_key = turn.key
              LIMIT k_limit) r)::integer >= k_limit;
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
          k_limits := k_limits || k_limit;
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
        -- The walk's keys with their limits: no join back to concurrency_keys (the planner
        -- hashed the whole table for it, 10,000 keys read per claim).
        SELECT c.id, c.priority, c.run_at, w.queue, r.running + c.n AS turn
        FROM unnest(k_queues, k_keys, k_rooms, k_limits) AS w(queue, key, room, max_running)
        -- The key's running jobs counted on this statement's snapshot, taken after the
        -- walk locked the key: every claim of it before has committed.
        CROSS JOIN LATERAL (SELECT count(*)::integer AS running FROM (SELECT FROM :schema.jobs r
          WHERE r.state = 'running' AND r.queue = w.queue AND r.concurrency_key = w.key LIMIT w.max_running) r) r
        CROSS JOIN LATERAL (
          SELECT t.id, t.priority, t.run_at, row_number() OVER (ORDER BY t.priority, t.run_at, t.id) AS n FROM (
            SELECT j.id, j.priority, j.run_at FROM :schema.jobs j
            WHERE j.state = 'queued' AND j.concurrency_key = w.key AND j.queue = w.queue AND j.run_at <= p_now AND j.task = ANY(p_tasks)
            ORDER BY j.priority, j.run_at, j.id
            -- only the key's room: no job locked that this claim cannot start
            LIMIT greatest(0, least(p_limit, coalesce(w.max_running - r.running, p_limit), coalesce(w.room, p_limit)))
            FOR UPDATE SKIP LOCKED
          ) t
        ) c
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
`;
