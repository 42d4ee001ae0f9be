-- Recurring schedules (issue 13). Each due fire enqueues one job, with the id
-- `{name}@{fire time as ISO 8601}`, in the same transaction that advances
-- next_fire_at (fireDue in src/store/sql/schedules.ts), guarded by the
-- next_fire_at it read: two runners that fire together enqueue it once.
-- Exactly one of cron and every_ms is set. A cron fires at its times in
-- `timezone`; every_ms fires at created_at + k * every_ms (k >= 1), so fires
-- never drift. next_fire_at is the next fire not yet enqueued (NULL: a cron
-- with no time left); after downtime only the latest missed fire is enqueued.
CREATE TABLE schedules (
  name         TEXT    PRIMARY KEY,
  queue        TEXT    NOT NULL,
  cron         TEXT,                                    -- five fields, read in `timezone`; NULL with every_ms
  every_ms     INTEGER CHECK (every_ms IS NULL OR every_ms >= 1000),
  timezone     TEXT,                                    -- an IANA name, with cron only
  payload      TEXT,                                    -- JSON text of every job's payload, or NULL
  priority     INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL DEFAULT 25,
  next_fire_at INTEGER,                                 -- ms since the epoch
  last_fire_at INTEGER,                                 -- the fire last enqueued, NULL before the first
  created_at   INTEGER NOT NULL,                        -- kept by a replace: every_ms's anchor
  updated_at   INTEGER NOT NULL,
  CHECK ((cron IS NULL) <> (every_ms IS NULL))
);

-- The due schedules, earliest first: a range of this index, so a run with none
-- due reads one entry whatever the number of schedules.
CREATE INDEX schedules_next_fire ON schedules (next_fire_at);
