import type { Migration } from '../../migrate.js';

/**
 * Fleet-wide queue concurrency (issue 12): `queues.concurrency`, the most jobs of the
 * queue running at once across every worker (NULL: no limit), an index of the running
 * jobs by queue, and the claim as a function, `claim_jobs`, so that it stays one round
 * trip and is exact under concurrent claimers.
 *
 * Why a function: in one statement, a lock taken on the queue's row cannot make the
 * statement see the jobs another claimer started meanwhile (a statement reads one
 * snapshot, taken before it waited), so counting them there could go over the limit.
 * In a VOLATILE plpgsql function each statement takes a new snapshot: the first locks
 * the rows of the served queues that have a limit (in name order, so two claimers never
 * deadlock), which waits for any claim of them in flight to commit; the second counts
 * the queue's running jobs, now including those, and claims at most `concurrency` −
 * running of them. Claims of a limited queue run one at a time. A claim of queues none
 * of which has a limit takes no lock and runs the claim the driver ran before as one
 * statement (issue 4: a loose scan of the served queues' priorities, a range scan per
 * (queue, priority) bounded by run_at <= now, then the best `p_limit`); with a limit,
 * the same, taking at most `room` = limit − running per limited queue (ranked in claim
 * order). One statement for both cases measured slower: the drain bench's claims (no
 * limit anywhere) took 2.1–2.3 ms instead of 1.0–1.3 ms at concurrency 10 (the cause was
 * not found; the lock and the scans' LIMIT were ruled out), so claims without a limit
 * keep the plain statement. `synchronous_commit` is off for its transaction only (see
 * ASYNC_COMMIT in context.ts). Raising or clearing a limit NOTIFYs `<schema>_jobs`, as a
 * resume does, so waiting workers claim at once.
 */
export const migration: Migration = {
  version: 11,
  name: 'queue-concurrency',
  sql: `
    ALTER TABLE :schema.queues ADD COLUMN concurrency integer CHECK (concurrency > 0);
    CREATE INDEX jobs_running_queue ON :schema.jobs (queue) WHERE state = 'running';
    CREATE TRIGGER queues_widened AFTER UPDATE OF concurrency ON :schema.queues
      FOR EACH ROW WHEN (OLD.concurrency IS NOT NULL AND (NEW.concurrency IS NULL OR NEW.concurrency > OLD.concurrency))
      EXECUTE FUNCTION :schema.notify_queued();
    CREATE FUNCTION :schema.claim_jobs(p_now timestamptz, p_queues text[], p_tasks text[], p_limit integer, p_worker text, p_expires timestamptz)
    RETURNS SETOF :schema.jobs LANGUAGE plpgsql VOLATILE AS $$
    BEGIN
      PERFORM set_config('synchronous_commit', 'off', true);
      IF NOT EXISTS (SELECT 1 FROM :schema.queues q WHERE q.name = ANY(p_queues) AND q.concurrency IS NOT NULL) THEN
        -- No served queue has a limit: the claim as it was (issue 4), no lock.
        RETURN QUERY
        WITH RECURSIVE prio AS (
          SELECT q.name AS queue, (SELECT priority FROM :schema.jobs WHERE state = 'queued' AND queue = q.name ORDER BY priority LIMIT 1) AS priority
          FROM unnest(p_queues) AS q(name)
          WHERE NOT EXISTS (SELECT 1 FROM :schema.queues p WHERE p.name = q.name AND p.paused_at IS NOT NULL)
          UNION ALL
          SELECT p.queue, (SELECT priority FROM :schema.jobs WHERE state = 'queued' AND queue = p.queue AND priority > p.priority ORDER BY priority LIMIT 1)
          FROM prio p WHERE p.priority IS NOT NULL
        ), next AS (
          SELECT c.id FROM prio p CROSS JOIN LATERAL (
            SELECT id, priority, run_at FROM :schema.jobs
            WHERE state = 'queued' AND queue = p.queue AND priority = p.priority AND run_at <= p_now AND task = ANY(p_tasks)
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
      -- A served queue has a limit: wait for the claims of limited queues in flight,
      -- then count and claim on a snapshot taken after them.
      PERFORM 1 FROM :schema.queues q WHERE q.name = ANY(p_queues) AND q.concurrency IS NOT NULL ORDER BY q.name FOR UPDATE;
      RETURN QUERY
      WITH RECURSIVE served AS (
        SELECT s.name AS queue,
          (SELECT l.concurrency - (SELECT count(*) FROM :schema.jobs r WHERE r.state = 'running' AND r.queue = s.name)::integer
           FROM :schema.queues l WHERE l.name = s.name AND l.concurrency IS NOT NULL) AS room
        FROM unnest(p_queues) AS s(name)
        WHERE NOT EXISTS (SELECT 1 FROM :schema.queues p WHERE p.name = s.name AND p.paused_at IS NOT NULL)
      ), prio AS (
        SELECT s.queue, s.room,
          (SELECT j.priority FROM :schema.jobs j WHERE j.state = 'queued' AND j.queue = s.queue ORDER BY j.priority LIMIT 1) AS priority
        FROM served s WHERE s.room IS NULL OR s.room > 0
        UNION ALL
        SELECT p.queue, p.room,
          (SELECT j.priority FROM :schema.jobs j WHERE j.state = 'queued' AND j.queue = p.queue AND j.priority > p.priority ORDER BY j.priority LIMIT 1)
        FROM prio p WHERE p.priority IS NOT NULL
      ), picked AS (
        SELECT c.id, c.priority, c.run_at, p.queue, p.room FROM prio p CROSS JOIN LATERAL (
          SELECT j.id, j.priority, j.run_at FROM :schema.jobs j
          WHERE j.state = 'queued' AND j.queue = p.queue AND j.priority = p.priority AND j.run_at <= p_now AND j.task = ANY(p_tasks)
          ORDER BY j.run_at, j.id
          LIMIT p_limit
          FOR UPDATE SKIP LOCKED
        ) c
      ), ranked AS (
        SELECT k.id, k.priority, k.run_at, k.room, row_number() OVER (PARTITION BY k.queue ORDER BY k.priority, k.run_at, k.id) AS n
        FROM picked k
      ), next AS (
        SELECT r.id FROM ranked r WHERE r.room IS NULL OR r.n <= r.room ORDER BY r.priority, r.run_at, r.id LIMIT p_limit
      )
      UPDATE :schema.jobs j SET state = 'running', attempt = j.attempt + 1, lease_owner = p_worker, lease_expires_at = p_expires,
        lease_token = j.lease_token + 1, started_at = p_now
      WHERE j.id = ANY(ARRAY(SELECT next.id FROM next))
      RETURNING j.*;
    END $$;
  `,
};
