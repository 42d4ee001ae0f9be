-- A lease's history stays small: the renews of one lease are one event, and
-- the repeated refusals of one stale lease are one event, each with how many
-- times it happened (count) and when first (at) and last (last_at). A job held
-- for hours with a renew every few seconds, or a zombie looping on renew,
-- no longer adds a row each time. The refusal counters still count every one.
ALTER TABLE events ADD COLUMN count INTEGER NOT NULL DEFAULT 1;
ALTER TABLE events ADD COLUMN last_at INTEGER;  -- NULL: the same as at

-- The events already recorded, folded the same way: one row kept per lease
-- (the first), with the count and last time of those it stands for.
CREATE TABLE events_folded (keep INTEGER PRIMARY KEY, n INTEGER NOT NULL, last INTEGER NOT NULL);
INSERT INTO events_folded (keep, n, last)
SELECT min(seq), count(*), max(at) FROM events WHERE kind = 'renewed' GROUP BY job_id, fence, owner;
INSERT INTO events_folded (keep, n, last)
SELECT min(seq), count(*), max(at) FROM events WHERE kind = 'refused' GROUP BY job_id, fence, owner, action, current_fence;
DELETE FROM events WHERE kind IN ('renewed', 'refused') AND seq NOT IN (SELECT keep FROM events_folded);
UPDATE events SET count = (SELECT n FROM events_folded WHERE keep = seq), last_at = (SELECT last FROM events_folded WHERE keep = seq)
WHERE seq IN (SELECT keep FROM events_folded WHERE n > 1);
DROP TABLE events_folded;

-- One renewed event per lease (a fence is never handed out twice for a job),
-- one refused event per stale lease, action and lease it met.
CREATE UNIQUE INDEX events_renewed_once ON events (job_id, fence, owner) WHERE kind = 'renewed';
CREATE UNIQUE INDEX events_refused_once ON events (job_id, fence, owner, action, current_fence) WHERE kind = 'refused';

-- The transitions, as in migrations/0002, except that a renew of a lease that
-- has renewed before counts on its event instead of adding one.
DROP TRIGGER jobs_event_transition;
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
  )
  ON CONFLICT (job_id, fence, owner) WHERE kind = 'renewed'
  DO UPDATE SET count = count + 1, at = min(at, excluded.at), last_at = max(coalesce(last_at, at), excluded.at);
END;

-- A refusal folded into its event is counted like one inserted (migrations/0004),
-- in the minute of the event's last refusal.
CREATE TRIGGER events_count_folded_refusal AFTER UPDATE OF count ON events WHEN new.kind = 'refused'
BEGIN
  INSERT INTO refusal_counts (queue, total) VALUES (new.queue, new.count - old.count)
  ON CONFLICT (queue) DO UPDATE SET total = total + excluded.total;
  INSERT INTO refusal_minutes (queue, minute, refusals) VALUES (new.queue, new.last_at / 60000, new.count - old.count)
  ON CONFLICT (queue, minute) DO UPDATE SET refusals = refusals + excluded.refusals;
  DELETE FROM refusal_minutes WHERE queue = new.queue AND minute < new.last_at / 60000 - 60;
END;
