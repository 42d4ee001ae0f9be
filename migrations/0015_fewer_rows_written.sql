-- A job's life in fewer rows written (issue 18). D1 bills each row a statement
-- inserts, updates or deletes, each index entry it writes, and each write its
-- triggers make; a happy job wrote 23 (docs/cost.md). What changes:
--
-- * jobs is keyed by its id WITHOUT ROWID: a row is one entry, not a row and
--   the entry of its text primary key. One index of the waiting jobs is left
--   (jobs_claim_waiting, in claim order); the reads by run_at across
--   priorities (stats, nextClaimable) seek it priority by priority.
-- * The history is kept where the job row cannot tell it. The row tells its
--   enqueue and its current lease: when it was claimed, its renews (how many,
--   first and last, each renew rewriting the row it rewrites anyway) and its
--   completion, each with its place in the job's history (`*_seq`). A lease
--   that ends otherwise (released, failed, expired, dead, or taken over once
--   expired) loses its owner from the row, so that write stores the lease as
--   ONE history row (jobs_record_ended_lease); refusals, retries, cancels and
--   deletions are stored as before. The view `events` tells the history as the
--   events table did, event for event: stored rows, a stored lease expanded to
--   its claim, renews and end, and what each job row tells (`row_events`).
-- * Counts per queue are kept once per statement by the statements that
--   enqueue, complete and purge (src/store/sql), not once per row by a
--   trigger; the rarer moves (a death, a cancel, a retry, a deletion) keep a
--   trigger each. Held leases are not counted: the stats read them from
--   jobs_held_by_until, so a claim, a renew, an expiry and a release change no
--   count. A job inserted or changed with plain SQL is not counted; the
--   INSERT INTO queue_counts below recounts from the jobs.
-- * history, queue_counts and the refusal counters are keyed WITHOUT ROWID too.
--
-- Seqs are per job from here on: a job's next event takes the highest seq of
-- its row and its stored history, plus one. The events of every job keep the
-- seqs they had.

-- The triggers on the tables rebuilt here go first, so that no rename meets them.
DROP TRIGGER jobs_fence_only_grows;
DROP TRIGGER jobs_raise_fence_floor;
DROP TRIGGER jobs_count_insert;
DROP TRIGGER jobs_count_move;
DROP TRIGGER jobs_count_requeue;
DROP TRIGGER jobs_count_delete;
DROP TRIGGER jobs_event_enqueued;
DROP TRIGGER jobs_event_transition;
DROP TRIGGER queues_spend_token;
DROP TRIGGER events_count_refusal;
DROP TRIGGER events_count_folded_refusal;

-- The stored history: the events of 0002-0012 (an event a row), and from now
-- on what the job rows cannot tell. A lease stored as one row keeps its end as
-- the row (kind, at, error: seq is the end's place) and its claim and renews in
-- the claimed_* and renewed_* columns (progress: its renews' latest).
CREATE TABLE history (
  job_id          TEXT    NOT NULL,
  seq             INTEGER NOT NULL,  -- the event's place in its job's history
  queue           TEXT    NOT NULL,
  at              INTEGER NOT NULL,
  kind            TEXT    NOT NULL,  -- as in the events of 0002, 0005 and 0010
  action          TEXT,
  owner           TEXT,
  fence           INTEGER,
  current_owner   TEXT,
  current_fence   INTEGER,
  error           TEXT,
  count           INTEGER NOT NULL DEFAULT 1,
  last_at         INTEGER,
  progress        TEXT,
  claimed_seq     INTEGER,           -- a stored lease: when and where its claim was
  claimed_at      INTEGER,
  renewed_seq     INTEGER,           -- its renews, if any: where, how many, first and last
  renews          INTEGER,
  renewed_at      INTEGER,
  renewed_last_at INTEGER,
  PRIMARY KEY (job_id, seq)
) WITHOUT ROWID;
INSERT INTO history (job_id, seq, queue, at, kind, action, owner, fence, current_owner, current_fence, error, count, last_at, progress)
SELECT job_id, seq, queue, at, kind, action, owner, fence, current_owner, current_fence, error, count, last_at, progress FROM events;
DROP TABLE events;

-- The jobs, as before, with what their rows tell of their history:
--   enqueued_seq           the place of its enqueue (NULL: stored, or none)
--   claimed_seq, _at       the current lease's claim (told while the row has an owner)
--   renewed_seq, _at, _last_at, renews
--                          its renews: the place of the first, when the first
--                          and the last, how many (0: none)
--   seq                    the highest place the row took: a completed job's
--                          completion (done, neither dead nor cancelled)
-- last_event names what the history stores of the row's last write: an end
-- of a lease the row does not tell (released, failed, expired, dead: read by
-- jobs_record_ended_lease), a cancel, a retry; a claim clears it, and the
-- writes the row tells (a renew, a completion) leave it.
CREATE TABLE jobs_rebuilt (
  id              TEXT    PRIMARY KEY,
  queue           TEXT    NOT NULL DEFAULT 'default',
  payload         TEXT,
  priority        INTEGER NOT NULL DEFAULT 0,
  run_at          INTEGER NOT NULL DEFAULT 0,
  owner           TEXT,
  until           INTEGER NOT NULL DEFAULT 0,
  fence           INTEGER NOT NULL DEFAULT 0 CHECK (fence >= 0),
  result          TEXT,
  done            INTEGER NOT NULL DEFAULT 0 CHECK (done IN (0, 1)),
  attempts        INTEGER NOT NULL DEFAULT 0,
  max_attempts    INTEGER NOT NULL DEFAULT 25,
  created_at      INTEGER NOT NULL,
  updated_at      INTEGER NOT NULL,
  dead            INTEGER NOT NULL DEFAULT 0 CHECK (dead IN (0, 1)),
  last_error      TEXT,
  last_event      TEXT,
  cancelled       INTEGER NOT NULL DEFAULT 0 CHECK (cancelled IN (0, 1) AND (cancelled = 0 OR done = 1)),
  progress        TEXT,
  enqueued_seq    INTEGER DEFAULT 1,
  claimed_seq     INTEGER,
  claimed_at      INTEGER,
  renewed_seq     INTEGER,
  renewed_at      INTEGER,
  renewed_last_at INTEGER,
  renews          INTEGER NOT NULL DEFAULT 0,
  seq             INTEGER NOT NULL DEFAULT 1,
  claim_clock     TEXT               -- the clock of its last claim (migrations/0013), read by queues_spend_token
) WITHOUT ROWID;

-- Each job's current incarnation: its latest enqueue; its lease, when it has
-- an owner and its claim was recorded (with its renews, and its completion if
-- it completed); and the highest seq of its events. These events move into
-- the row; the others stay stored.
CREATE TABLE told (
  id           TEXT PRIMARY KEY,
  enqueued_seq INTEGER,
  claimed_seq  INTEGER,
  claimed_at   INTEGER,
  renewed_seq  INTEGER,
  renewed_at   INTEGER,
  renewed_last_at INTEGER,
  renews       INTEGER,
  completed_seq INTEGER,
  last_seq     INTEGER
) WITHOUT ROWID;
INSERT INTO told
SELECT j.id,
       (SELECT max(seq) FROM history WHERE job_id = j.id AND kind = 'enqueued'),
       c.seq, c.at, r.seq, r.at, coalesce(r.last_at, r.at), r.count, d.seq,
       (SELECT max(seq) FROM history WHERE job_id = j.id)
FROM jobs j
LEFT JOIN history c ON c.job_id = j.id AND c.kind = 'claimed' AND c.fence = j.fence AND c.owner = j.owner
LEFT JOIN history r ON r.job_id = j.id AND r.kind = 'renewed' AND r.fence = j.fence AND r.owner = j.owner
LEFT JOIN history d ON d.job_id = j.id AND d.kind = 'completed' AND d.fence = j.fence AND d.owner = j.owner
                   AND j.done = 1 AND j.dead = 0 AND j.cancelled = 0;
-- A completed job's lease moves only with its completion; a lease without its claim stays stored.
UPDATE told SET claimed_seq = NULL, renewed_seq = NULL
WHERE claimed_seq IS NULL
   OR (completed_seq IS NULL AND id IN (SELECT id FROM jobs WHERE done = 1 AND dead = 0 AND cancelled = 0));
UPDATE told SET completed_seq = NULL WHERE claimed_seq IS NULL;

INSERT INTO jobs_rebuilt (id, queue, payload, priority, run_at, owner, until, fence, result, done, attempts, max_attempts,
                          created_at, updated_at, dead, last_error, last_event, cancelled, progress,
                          enqueued_seq, claimed_seq, claimed_at, renewed_seq, renewed_at, renewed_last_at, renews, seq, claim_clock)
SELECT j.id, j.queue, j.payload, j.priority, j.run_at, j.owner, j.until, j.fence, j.result, j.done, j.attempts, j.max_attempts,
       j.created_at, j.updated_at, j.dead, j.last_error,
       CASE WHEN j.last_event IN ('released', 'failed', 'expired', 'dead', 'cancelled', 'retried') THEN j.last_event END, j.cancelled, j.progress,
       t.enqueued_seq, t.claimed_seq, CASE WHEN t.claimed_seq IS NOT NULL THEN t.claimed_at END,
       CASE WHEN t.claimed_seq IS NOT NULL THEN t.renewed_seq END,
       CASE WHEN t.renewed_seq IS NOT NULL AND t.claimed_seq IS NOT NULL THEN t.renewed_at END,
       CASE WHEN t.renewed_seq IS NOT NULL AND t.claimed_seq IS NOT NULL THEN t.renewed_last_at END,
       CASE WHEN t.renewed_seq IS NOT NULL AND t.claimed_seq IS NOT NULL THEN t.renews ELSE 0 END,
       coalesce(t.completed_seq, t.last_seq, 0), j.claim_clock
FROM jobs j JOIN told t ON t.id = j.id;

DELETE FROM history WHERE (job_id, seq) IN (
  SELECT id, enqueued_seq FROM told WHERE enqueued_seq IS NOT NULL
  UNION ALL SELECT id, claimed_seq FROM told WHERE claimed_seq IS NOT NULL
  UNION ALL SELECT id, renewed_seq FROM told WHERE renewed_seq IS NOT NULL
  UNION ALL SELECT id, completed_seq FROM told WHERE completed_seq IS NOT NULL);
DROP TABLE told;
DROP TABLE jobs;
ALTER TABLE jobs_rebuilt RENAME TO jobs;

-- The indexes of the jobs (migrations/0004, 0006, 0007), less jobs_waiting_by_run_at.
-- jobs_held_by_until holds the owner too, so that the count of a queue's held
-- leases (the stats) and of its current ones (a limited queue's claims) reads
-- the index alone, not each job's row: no entry more is written, since a claim
-- or a takeover that changes the owner changes the lease's end as well.
CREATE INDEX jobs_claim_waiting ON jobs (queue, priority DESC, run_at, created_at, id) WHERE done = 0 AND owner IS NULL;
CREATE INDEX jobs_held_by_until ON jobs (queue, until, owner) WHERE done = 0 AND owner IS NOT NULL;
CREATE INDEX jobs_finished ON jobs (updated_at) WHERE done = 1;

-- A deleted job's history is purged by when it was deleted (migrations/0007).
CREATE INDEX history_deleted ON history (at) WHERE kind = 'deleted';

-- The jobs per queue by stored state: open (not done: waiting or held), done
-- (completed), dead and cancelled. A queue whose counts are all 0 has no job.
DROP TABLE queue_counts;
CREATE TABLE queue_counts (
  queue     TEXT    PRIMARY KEY,
  open      INTEGER NOT NULL DEFAULT 0,
  done      INTEGER NOT NULL DEFAULT 0,
  dead      INTEGER NOT NULL DEFAULT 0,
  cancelled INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
INSERT INTO queue_counts (queue, open, done, dead, cancelled)
SELECT queue, sum(done = 0), sum(done = 1 AND dead = 0 AND cancelled = 0), sum(dead = 1), sum(cancelled = 1) FROM jobs GROUP BY queue;

-- The refusal counters of migrations/0002 and 0004, keyed WITHOUT ROWID.
CREATE TABLE refusal_counts_rebuilt (queue TEXT PRIMARY KEY, total INTEGER NOT NULL) WITHOUT ROWID;
INSERT INTO refusal_counts_rebuilt (queue, total) SELECT queue, total FROM refusal_counts;
DROP TABLE refusal_counts;
ALTER TABLE refusal_counts_rebuilt RENAME TO refusal_counts;
CREATE TABLE refusal_minutes_rebuilt (
  queue    TEXT    NOT NULL,
  minute   INTEGER NOT NULL,
  refusals INTEGER NOT NULL,
  PRIMARY KEY (queue, minute)
) WITHOUT ROWID;
INSERT INTO refusal_minutes_rebuilt (queue, minute, refusals) SELECT queue, minute, refusals FROM refusal_minutes;
DROP TABLE refusal_minutes;
ALTER TABLE refusal_minutes_rebuilt RENAME TO refusal_minutes;

-- The fence rules of migrations/0001 and 0003, as they were.
CREATE TRIGGER jobs_fence_only_grows BEFORE UPDATE OF fence ON jobs
WHEN new.fence < old.fence
BEGIN
  SELECT RAISE(ABORT, 'a fence may only grow');
END;
CREATE TRIGGER jobs_raise_fence_floor AFTER DELETE ON jobs
BEGIN
  UPDATE fence_floor SET fence = old.fence WHERE fence < old.fence;
END;

-- The token a claim spends (migrations/0009, with the clocks of 0013): only a claim raises a fence.
CREATE TRIGGER queues_spend_token AFTER UPDATE OF fence ON jobs
WHEN new.fence > old.fence
BEGIN
  UPDATE queues SET
    micro_tokens = min(burst * 1000000,
                       micro_tokens + min(max(0, CAST(new.updated_at AS INTEGER) - tokens_at), burst * 1000000 / refill_per_ms + 1) * refill_per_ms)
                   - 1000000,
    tokens_at = CASE WHEN tokens_at > CAST(new.updated_at AS INTEGER)
                          AND (tokens_clock IS new.claim_clock OR tokens_at - CAST(new.updated_at AS INTEGER) > 600000)
                     THEN CAST(new.updated_at AS INTEGER)
                     ELSE max(tokens_at, CAST(new.updated_at AS INTEGER)) END,
    tokens_clock = CASE WHEN tokens_at > CAST(new.updated_at AS INTEGER)
                             AND NOT (tokens_clock IS new.claim_clock OR tokens_at - CAST(new.updated_at AS INTEGER) > 600000)
                        THEN tokens_clock ELSE new.claim_clock END
  WHERE queue = new.queue AND refill_per_ms IS NOT NULL;
END;

-- A lease that ends without its row telling it: nobody holds the job any more
-- (released, failed, expired, dead: last_event says which, and the write
-- reserved its place as the row's seq), or a claim took it over once expired
-- (its place is the one just before the new claim's). Stored as one row.
CREATE TRIGGER jobs_record_ended_lease AFTER UPDATE OF owner ON jobs
WHEN old.owner IS NOT NULL AND (new.owner IS NULL OR new.fence > old.fence)
BEGIN
  INSERT INTO history (job_id, seq, queue, at, kind, owner, fence, error, progress,
                       claimed_seq, claimed_at, renewed_seq, renews, renewed_at, renewed_last_at)
  VALUES (
    new.id, CASE WHEN new.owner IS NULL THEN new.seq ELSE new.claimed_seq - 1 END, new.queue, new.updated_at,
    CASE WHEN new.owner IS NULL THEN new.last_event ELSE 'expired' END,
    old.owner, old.fence,
    CASE WHEN new.owner IS NOT NULL OR new.last_event IN ('failed', 'expired', 'dead') THEN new.last_error END,
    CASE WHEN old.claimed_seq IS NOT NULL AND old.renewed_seq IS NOT NULL THEN old.progress END,
    old.claimed_seq, CASE WHEN old.claimed_seq IS NOT NULL THEN old.claimed_at END,
    CASE WHEN old.claimed_seq IS NOT NULL THEN old.renewed_seq END, CASE WHEN old.claimed_seq IS NOT NULL THEN old.renews END,
    CASE WHEN old.claimed_seq IS NOT NULL THEN old.renewed_at END, CASE WHEN old.claimed_seq IS NOT NULL THEN old.renewed_last_at END
  );
END;

-- The rare moves between counted states, one row each: a death (a failure or
-- an expiry on the last attempt), a cancel, a retry. A completion is counted
-- by the statement that completes (src/store/sql), once for all its jobs.
CREATE TRIGGER jobs_count_moves AFTER UPDATE OF done, dead, cancelled ON jobs
WHEN (old.done <> new.done OR old.dead <> new.dead OR old.cancelled <> new.cancelled)
 AND NOT (old.done = 0 AND new.done = 1 AND new.dead = 0 AND new.cancelled = 0)
BEGIN
  INSERT INTO queue_counts (queue, open, done, dead, cancelled)
  VALUES (new.queue, (new.done = 0) - (old.done = 0),
          (new.done = 1 AND new.dead = 0 AND new.cancelled = 0) - (old.done = 1 AND old.dead = 0 AND old.cancelled = 0),
          new.dead - old.dead, new.cancelled - old.cancelled)
  ON CONFLICT (queue) DO UPDATE SET
    open = open + excluded.open, done = done + excluded.done, dead = dead + excluded.dead, cancelled = cancelled + excluded.cancelled;
END;

-- A deletion is counted when it is recorded, its job still there to say what it was.
CREATE TRIGGER history_count_deletion AFTER INSERT ON history WHEN new.kind = 'deleted'
BEGIN
  UPDATE queue_counts SET
    open = queue_counts.open - (j.done = 0), done = queue_counts.done - (j.done = 1 AND j.dead = 0 AND j.cancelled = 0),
    dead = queue_counts.dead - j.dead, cancelled = queue_counts.cancelled - j.cancelled
  FROM jobs j WHERE j.id = new.job_id AND queue_counts.queue = j.queue;
END;

-- The refusal counters of migrations/0004 and 0005, on the history.
CREATE TRIGGER history_count_refusal AFTER INSERT ON history WHEN new.kind = 'refused'
BEGIN
  INSERT INTO refusal_counts (queue, total) VALUES (new.queue, 1)
  ON CONFLICT (queue) DO UPDATE SET total = total + 1;
  INSERT INTO refusal_minutes (queue, minute, refusals) VALUES (new.queue, new.at / 60000, 1)
  ON CONFLICT (queue, minute) DO UPDATE SET refusals = refusals + 1;
  DELETE FROM refusal_minutes WHERE queue = new.queue AND minute < new.at / 60000 - 60;
END;
CREATE TRIGGER history_count_folded_refusal AFTER UPDATE OF count ON history WHEN new.kind = 'refused'
BEGIN
  INSERT INTO refusal_counts (queue, total) VALUES (new.queue, new.count - old.count)
  ON CONFLICT (queue) DO UPDATE SET total = total + excluded.total;
  INSERT INTO refusal_minutes (queue, minute, refusals) VALUES (new.queue, new.last_at / 60000, new.count - old.count)
  ON CONFLICT (queue, minute) DO UPDATE SET refusals = refusals + excluded.refusals;
  DELETE FROM refusal_minutes WHERE queue = new.queue AND minute < new.last_at / 60000 - 60;
END;

-- What each job row tells of its history, as events: its enqueue, and while it
-- has an owner, its lease's claim, renews and completion.
CREATE VIEW row_events (seq, job_id, queue, at, kind, action, owner, fence, current_owner, current_fence, error, count, last_at, progress) AS
  SELECT enqueued_seq, id, queue, created_at, 'enqueued', NULL, NULL, NULL, NULL, NULL, NULL, 1, NULL, NULL
  FROM jobs WHERE enqueued_seq IS NOT NULL
  UNION ALL
  SELECT claimed_seq, id, queue, claimed_at, 'claimed', NULL, owner, fence, NULL, NULL, NULL, 1, NULL, NULL
  FROM jobs WHERE claimed_seq IS NOT NULL AND owner IS NOT NULL
  UNION ALL
  SELECT renewed_seq, id, queue, renewed_at, 'renewed', NULL, owner, fence, NULL, NULL, NULL, renews, iif(renews > 1, renewed_last_at, NULL), progress
  FROM jobs WHERE renewed_seq IS NOT NULL AND claimed_seq IS NOT NULL AND owner IS NOT NULL
  UNION ALL
  SELECT seq, id, queue, updated_at, 'completed', NULL, owner, fence, NULL, NULL, NULL, 1, NULL, NULL
  FROM jobs WHERE claimed_seq IS NOT NULL AND owner IS NOT NULL AND done = 1 AND dead = 0 AND cancelled = 0;

-- Every job's history, as the events table of 0002-0012 held it: the stored
-- rows (a stored lease as its claim, its renews and its end) and what the
-- rows tell. GET /v1/jobs/{id}/events reads it by job and seq.
CREATE VIEW events (seq, job_id, queue, at, kind, action, owner, fence, current_owner, current_fence, error, count, last_at, progress) AS
  SELECT seq, job_id, queue, at, kind, action, owner, fence, current_owner, current_fence, error, count, last_at,
         iif(claimed_seq IS NULL, progress, NULL)
  FROM history
  UNION ALL
  SELECT claimed_seq, job_id, queue, claimed_at, 'claimed', NULL, owner, fence, NULL, NULL, NULL, 1, NULL, NULL
  FROM history WHERE claimed_seq IS NOT NULL
  UNION ALL
  SELECT renewed_seq, job_id, queue, renewed_at, 'renewed', NULL, owner, fence, NULL, NULL, NULL, renews, iif(renews > 1, renewed_last_at, NULL), progress
  FROM history WHERE renewed_seq IS NOT NULL
  UNION ALL
  SELECT * FROM row_events;
