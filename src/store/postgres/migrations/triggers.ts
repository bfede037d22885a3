/**
 * The trigger functions of the PostgreSQL baseline (0024-baseline.ts), each defined
 * here once, and their triggers:
 * - `notify_queued`: NOTIFY `<prefix>_jobs` (sent at commit, so a job enqueued in a
 *   rolled-back transaction wakes nobody) when jobs are inserted, a job becomes queued
 *   again, a queue is resumed, its concurrency limit raised or cleared, or a rate changed:
 *   every listening worker claims at once.
 * - `notify_cancel`: NOTIFY `<prefix>_cancel` with `{"id", "reason"}` (the reason cut at
 *   2,000 characters) when a running job gets a cancel request.
 * - `refuse_finished_tick`: a schedule's tick has one job. `jobs_schedule_tick` and
 *   `jobs_finished_schedule_tick` are unique per table; this refuses to insert a tick's
 *   job into `jobs` while the tick's finished job exists. A check, not an index across both
 *   tables: an insert racing the move of the tick's own job is not seen; the scheduler's
 *   compare-and-set is what enqueues a tick exactly once.
 * - `count_concurrency_key` (per row) and `count_concurrency_keys_gone` (per DELETE
 *   statement, over its transition table): the queued count of `concurrency_keys`. A
 *   key's running jobs are not counted in its row but where a limit is checked (the
 *   claim), so a keyed job's completion writes nothing here; queued -> running is counted
 *   by the claim itself. The row trigger updates first and inserts only a key it did not
 *   find (a new key's turn is its latest running job's start); the statement trigger
 *   locks the keys in (queue, key) order, so two statements ending queued jobs of the same
 *   keys cannot deadlock. A row whose queued count reaches 0 is deleted.
 * - `notify_finished`: while a process awaits a result (a live row in
 *   `finished_listeners`), NOTIFY `<prefix>_done` with the ids that ended ('' when over
 *   500: "read again"). Without a listener it sends nothing: a NOTIFY takes a lock at
 *   commit that serializes committing transactions, which completions must not pay when
 *   nobody waits. `_done`, not `_finished`: `<prefix>_cancel` must fit in 63 bytes.
 * - `wake_parents`: a parent waiting for its children (`wait.kind` 'children',
 *   `wait.ids`) becomes due when a waited child ended failed or cancelled, or none is left
 *   unfinished, in the transaction that ends the child, with a NOTIFY. The parents' rows
 *   are locked first, in id order: a parent suspending at once either committed before
 *   (and is woken here) or reads the children after this commit; of two children ending
 *   at once, the second to take the lock sees the first's end.
 * `:schema` is replaced by the quoted schema name, `:channel` by the channel prefix.
 */
export const triggers = `
    CREATE FUNCTION :schema.notify_queued() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify(':channel_jobs', '');
      RETURN NULL;
    END $$;
    CREATE TRIGGER jobs_inserted AFTER INSERT ON :schema.jobs
      FOR EACH STATEMENT EXECUTE FUNCTION :schema.notify_queued();
    CREATE TRIGGER jobs_requeued AFTER UPDATE OF state ON :schema.jobs
      FOR EACH ROW WHEN (NEW.state = 'queued' AND OLD.state <> 'queued') EXECUTE FUNCTION :schema.notify_queued();
    CREATE TRIGGER queues_resumed AFTER UPDATE OF paused_at ON :schema.queues
      FOR EACH ROW WHEN (OLD.paused_at IS NOT NULL AND NEW.paused_at IS NULL) EXECUTE FUNCTION :schema.notify_queued();
    CREATE TRIGGER queues_widened AFTER UPDATE OF concurrency ON :schema.queues
      FOR EACH ROW WHEN (OLD.concurrency IS NOT NULL AND (NEW.concurrency IS NULL OR NEW.concurrency > OLD.concurrency))
      EXECUTE FUNCTION :schema.notify_queued();
    CREATE TRIGGER queues_rate_changed AFTER UPDATE OF rate_limit, rate_period_ms, key_rate_limit, key_rate_period_ms ON :schema.queues
      FOR EACH ROW EXECUTE FUNCTION :schema.notify_queued();
    CREATE FUNCTION :schema.notify_cancel() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify(':channel_cancel', json_build_object('id', NEW.id, 'reason', left(NEW.cancel_reason, 2000))::text);
      RETURN NULL;
    END $$;
    CREATE TRIGGER jobs_cancel_requested AFTER UPDATE OF cancel_requested_at ON :schema.jobs
      FOR EACH ROW WHEN (NEW.state = 'running' AND OLD.cancel_requested_at IS NULL AND NEW.cancel_requested_at IS NOT NULL)
      EXECUTE FUNCTION :schema.notify_cancel();
    CREATE FUNCTION :schema.refuse_finished_tick() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF EXISTS (SELECT 1 FROM :schema.jobs_finished WHERE schedule_name = NEW.schedule_name AND scheduled_for = NEW.scheduled_for) THEN
        RAISE unique_violation USING MESSAGE = format('duplicate key value violates unique constraint "jobs_finished_schedule_tick": schedule %s has a finished job for the tick %s', NEW.schedule_name, NEW.scheduled_for),
          CONSTRAINT = 'jobs_finished_schedule_tick';
      END IF;
      RETURN NEW;
    END $$;
    CREATE TRIGGER jobs_tick_unique BEFORE INSERT ON :schema.jobs
      FOR EACH ROW WHEN (NEW.schedule_name IS NOT NULL AND NEW.scheduled_for IS NOT NULL) EXECUTE FUNCTION :schema.refuse_finished_tick();
    CREATE FUNCTION :schema.count_concurrency_key() RETURNS trigger LANGUAGE plpgsql AS $$
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
    CREATE FUNCTION :schema.count_concurrency_keys_gone() RETURNS trigger LANGUAGE plpgsql AS $$
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
    CREATE TRIGGER jobs_key_insert AFTER INSERT ON :schema.jobs
      FOR EACH ROW WHEN (NEW.concurrency_key IS NOT NULL AND NEW.state = 'queued') EXECUTE FUNCTION :schema.count_concurrency_key();
    CREATE TRIGGER jobs_key_state AFTER UPDATE OF state ON :schema.jobs
      FOR EACH ROW WHEN (NEW.concurrency_key IS NOT NULL AND (OLD.state = 'queued') <> (NEW.state = 'queued') AND NOT (OLD.state = 'queued' AND NEW.state = 'running'))
      EXECUTE FUNCTION :schema.count_concurrency_key();
    CREATE TRIGGER jobs_key_gone AFTER DELETE ON :schema.jobs REFERENCING OLD TABLE AS gone_jobs
      FOR EACH STATEMENT EXECUTE FUNCTION :schema.count_concurrency_keys_gone();
    CREATE FUNCTION :schema.notify_finished() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF EXISTS (SELECT 1 FROM :schema.finished_listeners WHERE expires_at > now()) THEN
        PERFORM pg_notify(':channel_done', (SELECT CASE WHEN count(*) <= 500 THEN coalesce(string_agg(id::text, ','), '') ELSE '' END FROM ended));
      END IF;
      RETURN NULL;
    END $$;
    CREATE TRIGGER jobs_finished_notify AFTER INSERT ON :schema.jobs_finished
      REFERENCING NEW TABLE AS ended FOR EACH STATEMENT EXECUTE FUNCTION :schema.notify_finished();
    CREATE FUNCTION :schema.wake_parents() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      parents bigint[];
      woken integer;
    BEGIN
      SELECT array_agg(DISTINCT parent_id ORDER BY parent_id) INTO parents FROM ended WHERE parent_id IS NOT NULL;
      IF parents IS NULL THEN RETURN NULL; END IF;
      PERFORM 1 FROM :schema.jobs WHERE id = ANY(parents) ORDER BY id FOR UPDATE;
      UPDATE :schema.jobs p SET run_at = least(p.run_at, now())
      WHERE p.id = ANY(parents) AND p.state = 'queued' AND p.wait->>'kind' = 'children'
        AND (EXISTS (SELECT 1 FROM ended e WHERE e.parent_id = p.id AND e.state <> 'completed')
          OR NOT EXISTS (SELECT 1 FROM :schema.jobs c WHERE c.id IN (SELECT (jsonb_array_elements_text(p.wait->'ids'))::bigint)));
      GET DIAGNOSTICS woken = ROW_COUNT;
      IF woken > 0 THEN PERFORM pg_notify(':channel_jobs', ''); END IF;
      RETURN NULL;
    END $$;
    CREATE TRIGGER jobs_child_ended AFTER INSERT ON :schema.jobs_finished
      REFERENCING NEW TABLE AS ended FOR EACH STATEMENT EXECUTE FUNCTION :schema.wake_parents();
`;
