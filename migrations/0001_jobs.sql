-- The lease state of every job. Times are integer milliseconds since the epoch,
-- given by the caller, so comparisons need no format tricks.
CREATE TABLE jobs (
  id           TEXT    PRIMARY KEY,
  queue        TEXT    NOT NULL DEFAULT 'default',
  payload      TEXT,                                  -- JSON text, or NULL
  priority     INTEGER NOT NULL DEFAULT 0,            -- higher runs first
  run_at       INTEGER NOT NULL DEFAULT 0,            -- not claimed by claim-next before this
  owner        TEXT,                                  -- NULL when nobody holds the lease
  until        INTEGER NOT NULL DEFAULT 0,            -- the lease is valid while until > now
  fence        INTEGER NOT NULL DEFAULT 0 CHECK (fence >= 0),
  result       TEXT,
  done         INTEGER NOT NULL DEFAULT 0 CHECK (done IN (0, 1)),
  attempts     INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL DEFAULT 25,
  created_at   INTEGER NOT NULL,
  updated_at   INTEGER NOT NULL
);

-- Claim-next walks this index in claim order and stops at its LIMIT; done jobs
-- are not in it, so a queue's history does not slow down its head.
CREATE INDEX jobs_claim_order ON jobs (queue, priority DESC, run_at, created_at, id) WHERE done = 0;

-- A fence must never be handed out twice for the same id, even after the row is
-- deleted and the id enqueued again: the highest fence of a deleted row stays
-- here, and enqueue starts a new row at it.
CREATE TABLE retired_fences (
  id    TEXT    PRIMARY KEY,
  fence INTEGER NOT NULL
);

CREATE TRIGGER jobs_retire_fence AFTER DELETE ON jobs
BEGIN
  INSERT INTO retired_fences (id, fence) VALUES (old.id, old.fence)
  ON CONFLICT (id) DO UPDATE SET fence = max(fence, excluded.fence);
END;

-- The last line of defence for the rule everything else rests on.
CREATE TRIGGER jobs_fence_only_grows BEFORE UPDATE OF fence ON jobs
WHEN new.fence < old.fence
BEGIN
  SELECT RAISE(ABORT, 'a fence may only grow');
END;
