-- Cancel and progress (issue 13).

-- A cancelled job is final, like a dead one, and so it is also done (done = 1):
-- it leaves every index of jobs still to run (jobs_claim_waiting,
-- jobs_waiting_by_run_at and jobs_held_by_until are `WHERE done = 0 ...`), no
-- lease of it is current any more (currentLease in src/store/sql/lease.ts asks
-- done = 0), and the purge takes it with the done and dead jobs (jobs_finished,
-- `WHERE done = 1`). Its owner, until and fence stay as they were, so a holder's
-- refused write is told why (reason cancelled) and the fence never moves back.
-- Only a job not done can be cancelled (src/store/sql/cancel.ts).
ALTER TABLE jobs ADD COLUMN cancelled INTEGER NOT NULL DEFAULT 0 CHECK (cancelled IN (0, 1) AND (cancelled = 0 OR done = 1));

-- What a current lease last reported with a renew: JSON text, or NULL. Only the
-- renew's own statement writes it, so a refused renew stores nothing.
ALTER TABLE jobs ADD COLUMN progress TEXT;

-- A renewed event (one per lease, migrations/0005) carries the job's progress
-- after the latest renew it stands for; other events NULL.
ALTER TABLE events ADD COLUMN progress TEXT;

-- The stored states of migrations/0004 gain cancelled; done no longer counts
-- them (done: completed, neither dead nor cancelled).
ALTER TABLE queue_counts ADD COLUMN cancelled INTEGER NOT NULL DEFAULT 0;

DROP TRIGGER jobs_count_insert;
CREATE TRIGGER jobs_count_insert AFTER INSERT ON jobs
BEGIN
  INSERT INTO queue_counts (queue, waiting, held, done, dead, cancelled)
  VALUES (new.queue, new.done = 0 AND new.owner IS NULL, new.done = 0 AND new.owner IS NOT NULL,
          new.done = 1 AND new.dead = 0 AND new.cancelled = 0, new.dead = 1, new.cancelled = 1)
  ON CONFLICT (queue) DO UPDATE SET
    waiting = waiting + excluded.waiting, held = held + excluded.held, done = done + excluded.done,
    dead = dead + excluded.dead, cancelled = cancelled + excluded.cancelled;
END;

DROP TRIGGER jobs_count_move;
CREATE TRIGGER jobs_count_move AFTER UPDATE OF owner, done, dead, cancelled ON jobs
WHEN old.queue = new.queue
 AND (old.done <> new.done OR old.dead <> new.dead OR old.cancelled <> new.cancelled OR (old.owner IS NULL) <> (new.owner IS NULL))
BEGIN
  UPDATE queue_counts SET
    waiting = waiting - (old.done = 0 AND old.owner IS NULL) + (new.done = 0 AND new.owner IS NULL),
    held = held - (old.done = 0 AND old.owner IS NOT NULL) + (new.done = 0 AND new.owner IS NOT NULL),
    done = done - (old.done = 1 AND old.dead = 0 AND old.cancelled = 0) + (new.done = 1 AND new.dead = 0 AND new.cancelled = 0),
    dead = dead - (old.dead = 1) + (new.dead = 1),
    cancelled = cancelled - (old.cancelled = 1) + (new.cancelled = 1)
  WHERE queue = new.queue;
END;

DROP TRIGGER jobs_count_requeue;
CREATE TRIGGER jobs_count_requeue AFTER UPDATE OF queue ON jobs
WHEN old.queue <> new.queue
BEGIN
  UPDATE queue_counts SET
    waiting = waiting - (old.done = 0 AND old.owner IS NULL), held = held - (old.done = 0 AND old.owner IS NOT NULL),
    done = done - (old.done = 1 AND old.dead = 0 AND old.cancelled = 0), dead = dead - (old.dead = 1), cancelled = cancelled - (old.cancelled = 1)
  WHERE queue = old.queue;
  DELETE FROM queue_counts WHERE queue = old.queue AND waiting = 0 AND held = 0 AND done = 0 AND dead = 0 AND cancelled = 0;
  INSERT INTO queue_counts (queue, waiting, held, done, dead, cancelled)
  VALUES (new.queue, new.done = 0 AND new.owner IS NULL, new.done = 0 AND new.owner IS NOT NULL,
          new.done = 1 AND new.dead = 0 AND new.cancelled = 0, new.dead = 1, new.cancelled = 1)
  ON CONFLICT (queue) DO UPDATE SET
    waiting = waiting + excluded.waiting, held = held + excluded.held, done = done + excluded.done,
    dead = dead + excluded.dead, cancelled = cancelled + excluded.cancelled;
END;

DROP TRIGGER jobs_count_delete;
CREATE TRIGGER jobs_count_delete AFTER DELETE ON jobs
BEGIN
  UPDATE queue_counts SET
    waiting = waiting - (old.done = 0 AND old.owner IS NULL), held = held - (old.done = 0 AND old.owner IS NOT NULL),
    done = done - (old.done = 1 AND old.dead = 0 AND old.cancelled = 0), dead = dead - (old.dead = 1), cancelled = cancelled - (old.cancelled = 1)
  WHERE queue = old.queue;
  DELETE FROM queue_counts WHERE queue = old.queue AND waiting = 0 AND held = 0 AND done = 0 AND dead = 0 AND cancelled = 0;
END;

-- The transitions, as in migrations/0005, with two changes: a renewed event
-- carries the job's progress, the latest of the renews it stands for; and a
-- cancel is not recorded here but by the statement after it (cancel in
-- src/store/sql/cancel.ts), which has what the row does not: who cancelled,
-- and why.
DROP TRIGGER jobs_event_transition;
CREATE TRIGGER jobs_event_transition AFTER UPDATE OF last_event ON jobs
WHEN new.last_event IS NOT 'cancelled'
BEGIN
  -- A claim that takes over an expired lease records that lease's expiry first.
  INSERT INTO events (job_id, queue, at, kind, owner, fence, error)
  SELECT new.id, new.queue, new.updated_at, 'expired', old.owner, old.fence, new.last_error
  WHERE new.last_event = 'claimed' AND old.owner IS NOT NULL;

  INSERT INTO events (job_id, queue, at, kind, owner, fence, error, progress)
  VALUES (
    new.id, new.queue, new.updated_at, new.last_event,
    CASE WHEN new.last_event = 'claimed' THEN new.owner ELSE old.owner END,
    new.fence,
    CASE WHEN new.last_event IN ('failed', 'expired', 'dead') THEN new.last_error END,
    CASE WHEN new.last_event = 'renewed' THEN new.progress END
  )
  ON CONFLICT (job_id, fence, owner) WHERE kind = 'renewed'
  DO UPDATE SET count = count + 1, at = min(at, excluded.at), last_at = max(coalesce(last_at, at), excluded.at), progress = excluded.progress;
END;
