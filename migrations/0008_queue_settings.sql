-- Queue controls (issue 13), decided inside the claim statements (takeNext and
-- claim in src/store/sql/lease.ts), never before them. A queue without a row here
-- has no settings: not paused, no limit. The claim looks its queue up by this
-- primary key, so a queue without settings costs one lookup; a limited queue
-- counts its current leases in jobs_held_by_until (migrations/0004), a range
-- `until > now`, so an expired lease frees its slot at once.
CREATE TABLE queues (
  queue      TEXT    PRIMARY KEY,
  paused     INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),  -- 1: claims hand out nothing; held leases go on
  max_leased INTEGER CHECK (max_leased IS NULL OR max_leased > 0), -- at most this many current leases; NULL: no limit
  updated_at INTEGER NOT NULL
);
