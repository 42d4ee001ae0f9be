-- A queue's whole life: failures, retries, dead letters, and the history of
-- every transition and every refused write.

-- A dead job is also done (done = 1): nothing can claim or write to it, and
-- the claim index leaves it out. Only a retry brings it back.
ALTER TABLE jobs ADD COLUMN dead INTEGER NOT NULL DEFAULT 0 CHECK (dead IN (0, 1));
ALTER TABLE jobs ADD COLUMN last_error TEXT;
-- The transition the last write made (claimed, renewed, completed, released,
-- failed, expired, dead, retried); the trigger below records it as an event.
ALTER TABLE jobs ADD COLUMN last_event TEXT;

CREATE TABLE events (
  seq           INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id        TEXT    NOT NULL,
  queue         TEXT    NOT NULL,
  at            INTEGER NOT NULL,
  kind          TEXT    NOT NULL,  -- a transition, or 'refused' for a refused write with a lease
  action        TEXT,              -- refused: renew, complete, release or fail
  owner         TEXT,              -- who acted; refused: the owner presented
  fence         INTEGER,           -- the fence acted with; refused: the fence presented
  current_owner TEXT,              -- refused: the job's owner and fence when it was refused
  current_fence INTEGER,
  error         TEXT               -- failed, expired, dead: why
);
CREATE INDEX events_by_job ON events (job_id, seq);
CREATE INDEX events_refused ON events (at) WHERE kind = 'refused';

-- Refusals ever, per queue: a counter that outlives the purge of old events.
CREATE TABLE refusal_counts (
  queue TEXT    PRIMARY KEY,
  total INTEGER NOT NULL
);

CREATE TRIGGER events_count_refusal AFTER INSERT ON events WHEN new.kind = 'refused'
BEGIN
  INSERT INTO refusal_counts (queue, total) VALUES (new.queue, 1)
  ON CONFLICT (queue) DO UPDATE SET total = total + 1;
END;

-- Events are written by the database in the same statement as the transition.
CREATE TRIGGER jobs_event_enqueued AFTER INSERT ON jobs
BEGIN
  INSERT INTO events (job_id, queue, at, kind) VALUES (new.id, new.queue, new.created_at, 'enqueued');
END;

CREATE TRIGGER jobs_event_transition AFTER UPDATE OF last_event ON jobs
BEGIN
  -- A claim that takes over an expired lease records that lease's expiry first.
  INSERT INTO events (job_id, queue, at, kind, owner, fence, error)
  SELECT new.id, new.queue, new.updated_at, 'expired', old.owner, old.fence, new.last_error
  WHERE new.last_event = 'claimed' AND old.owner IS NOT NULL;

  INSERT INTO events (job_id, queue, at, kind, owner, fence, error)
  VALUES (
    new.id, new.queue, new.updated_at, new.last_event,
    CASE WHEN new.last_event = 'claimed' THEN new.owner ELSE old.owner END,
    new.fence,
    CASE WHEN new.last_event IN ('failed', 'expired', 'dead') THEN new.last_error END
  );
END;
