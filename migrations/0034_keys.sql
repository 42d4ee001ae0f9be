-- Flow control by key (issue 29): a job may carry a key (a tenant, a user, an
-- API key), and a queue may limit its keys: at most max_leased_per_key current
-- leases a key, a token bucket a key, one job at a time a key in order
-- (ordered_by_key), and turns between keys (fair_by_key). The claim statements
-- decide by them (src/store/sql/keys.ts, src/store/sql/claim-next.ts).
ALTER TABLE jobs ADD COLUMN key TEXT;
-- 1: the job waits for its key's turn, out of the claim indexes. A queue with
-- max_leased_per_key (or ordered_by_key: one) lets that many open jobs of a
-- key in, in order (priority first, then age); the others wait here, so that
-- a key with 100,000 jobs puts no more than its limit in the claims' way.
-- `jobs_let_in_next` lets the next one in when one leaves; `jobs_go_ahead`
-- lets a job of a higher priority in ahead of one let in that has not started.
-- In a queue that is not ordered, a job enqueued for later takes no place
-- until it is claimed (src/store/sql/keys.ts, `heldBack`).
ALTER TABLE jobs ADD COLUMN held_back INTEGER NOT NULL DEFAULT 0 CHECK (held_back IN (0, 1));
-- The job's turn among its key's jobs, in a fair_by_key queue (NULL elsewhere):
-- its key's last turn plus one, or the turn the queue is at for a key that had
-- none open. Claims take turn by turn, so keys take turns.
ALTER TABLE jobs ADD COLUMN turn INTEGER;
-- Its place in the enqueueMany that made it (0 for an enqueue of one): a key's
-- order is priority first, then age, then this, so that the jobs of one call,
-- made at the same ms, keep the call's order.
ALTER TABLE jobs ADD COLUMN place INTEGER NOT NULL DEFAULT 0;
ALTER TABLE schedules ADD COLUMN key TEXT;

ALTER TABLE queues ADD COLUMN max_leased_per_key INTEGER CHECK (max_leased_per_key IS NULL OR max_leased_per_key > 0);
ALTER TABLE queues ADD COLUMN key_refill_per_ms INTEGER CHECK (key_refill_per_ms IS NULL OR key_refill_per_ms > 0);
ALTER TABLE queues ADD COLUMN key_burst INTEGER CHECK (key_burst IS NULL OR key_burst > 0);
ALTER TABLE queues ADD COLUMN ordered_by_key INTEGER NOT NULL DEFAULT 0 CHECK (ordered_by_key IN (0, 1));
ALTER TABLE queues ADD COLUMN fair_by_key INTEGER NOT NULL DEFAULT 0 CHECK (fair_by_key IN (0, 1));

-- A key's token bucket, as migrations/0009 and 0013 keep a queue's: written by
-- the claim that spends (`keys_spend_token`), a row a key that was claimed in a
-- queue with a key rate; a key without a row has a full bucket.
CREATE TABLE key_buckets (
  queue        TEXT    NOT NULL,
  key          TEXT    NOT NULL,
  micro_tokens INTEGER NOT NULL,
  tokens_at    INTEGER NOT NULL,
  tokens_clock TEXT,
  PRIMARY KEY (queue, key)
) WITHOUT ROWID;

-- The claim indexes hold only the jobs let in: those of a key waiting their
-- turn are in jobs_key_open alone. The jobs of a fair queue's keys are in
-- claim order by turn.
DROP INDEX jobs_claim_waiting;
CREATE INDEX jobs_claim_waiting ON jobs (queue, priority DESC, run_at, created_at, id) WHERE done = 0 AND owner IS NULL AND held_back = 0 AND turn IS NULL;
CREATE INDEX jobs_turn_waiting ON jobs (queue, priority DESC, turn, run_at, created_at, id) WHERE done = 0 AND owner IS NULL AND held_back = 0 AND turn IS NOT NULL;
-- A key's current leases are counted among its queue's, as the queue's are: the
-- key rides in the entry a lease writes anyway, so a keyed lease writes no row more.
DROP INDEX jobs_held_by_until;
CREATE INDEX jobs_held_by_until ON jobs (queue, until, owner, key) WHERE done = 0 AND owner IS NOT NULL;
-- A key's open jobs in its order: how many it has, which comes next, and the
-- keys a queue has. One entry a keyed job, written at its enqueue.
CREATE INDEX jobs_key_open ON jobs (queue, key, priority DESC, created_at, place, id) WHERE done = 0 AND key IS NOT NULL;

-- When a job that was let in leaves (done, dead, cancelled or deleted), the
-- next of its key comes in: its key's first job held back, in order.
CREATE TRIGGER jobs_let_in_next AFTER UPDATE OF done ON jobs
WHEN old.done = 0 AND new.done = 1 AND old.held_back = 0 AND new.key IS NOT NULL
BEGIN
  UPDATE jobs SET held_back = 0
  WHERE id = (SELECT id FROM jobs WHERE queue = new.queue AND key = new.key AND done = 0 AND held_back = 1
              ORDER BY priority DESC, created_at, place, id LIMIT 1);
END;
CREATE TRIGGER jobs_let_in_next_on_delete AFTER DELETE ON jobs
WHEN old.done = 0 AND old.held_back = 0 AND old.key IS NOT NULL
BEGIN
  UPDATE jobs SET held_back = 0
  WHERE id = (SELECT id FROM jobs WHERE queue = old.queue AND key = old.key AND done = 0 AND held_back = 1
              ORDER BY priority DESC, created_at, place, id LIMIT 1);
END;

-- A job held back at its enqueue that comes, by its priority, before a job of
-- its key let in that has not started (never claimed) goes in in its place.
-- Only a priority above the key's lowest can do that, so a key whose jobs
-- share one priority pays one seek; the jobs let in are looked for among the
-- key's first 1,001 in order (let in: at most 1,000 a key).
CREATE TRIGGER jobs_go_ahead AFTER INSERT ON jobs
WHEN new.held_back = 1 AND new.key IS NOT NULL
 AND new.priority > (SELECT o.priority FROM jobs o WHERE o.queue = new.queue AND o.key = new.key AND o.done = 0
                     ORDER BY o.priority, o.created_at DESC, o.place DESC, o.id DESC LIMIT 1)
BEGIN
  UPDATE jobs SET held_back = 1
  WHERE id = (SELECT first.id FROM (SELECT o.id, o.priority, o.held_back, o.owner, o.claimed_seq, o.created_at, o.place FROM jobs o
                                    WHERE o.queue = new.queue AND o.key = new.key AND o.done = 0
                                    ORDER BY o.priority DESC, o.created_at, o.place, o.id LIMIT 1001) first
              WHERE first.held_back = 0 AND first.owner IS NULL AND first.claimed_seq IS NULL AND first.priority < new.priority
              ORDER BY first.priority, first.created_at DESC, first.place DESC, first.id DESC LIMIT 1);
  UPDATE jobs SET held_back = 0 WHERE id = new.id AND changes() = 1;
END;

-- In a queue that is not ordered, a job let in that fails and waits for its
-- retry steps aside for the next job of its key held back, so that a key's due
-- jobs are not held behind it; it comes back in as the first of its key held
-- back, when one of its key leaves.
CREATE TRIGGER jobs_step_aside AFTER UPDATE OF last_event ON jobs
WHEN new.last_event = 'failed' AND new.key IS NOT NULL AND new.held_back = 0 AND new.run_at > new.updated_at
 AND coalesce((SELECT ordered_by_key = 0 FROM queues WHERE queue = new.queue), 0)
BEGIN
  UPDATE jobs SET held_back = 0
  WHERE id = (SELECT id FROM jobs WHERE queue = new.queue AND key = new.key AND done = 0 AND held_back = 1
              ORDER BY priority DESC, created_at, place, id LIMIT 1);
  UPDATE jobs SET held_back = 1 WHERE id = new.id AND changes() = 1;
END;

-- A claim of a keyed job in a queue with a key rate spends a token of its key's
-- bucket, as queues_spend_token (migrations/0013) spends one of the queue's,
-- with the same rules for a clock behind the last count.
CREATE TRIGGER keys_spend_token AFTER UPDATE OF fence ON jobs
WHEN new.fence > old.fence AND new.key IS NOT NULL
BEGIN
  INSERT INTO key_buckets (queue, key, micro_tokens, tokens_at, tokens_clock)
  SELECT new.queue, new.key, key_burst * 1000000 - 1000000, CAST(new.updated_at AS INTEGER), new.claim_clock
  FROM queues WHERE queue = new.queue AND key_refill_per_ms IS NOT NULL
  ON CONFLICT (queue, key) DO UPDATE SET
    micro_tokens = min((SELECT key_burst FROM queues WHERE queue = new.queue) * 1000000,
                       micro_tokens + min(max(0, CAST(new.updated_at AS INTEGER) - tokens_at),
                                          (SELECT key_burst * 1000000 / key_refill_per_ms + 1 FROM queues WHERE queue = new.queue))
                                      * (SELECT key_refill_per_ms FROM queues WHERE queue = new.queue))
                   - 1000000,
    tokens_at = CASE WHEN tokens_at > CAST(new.updated_at AS INTEGER)
                          AND (tokens_clock IS new.claim_clock OR tokens_at - CAST(new.updated_at AS INTEGER) > 600000)
                     THEN CAST(new.updated_at AS INTEGER)
                     ELSE max(tokens_at, CAST(new.updated_at AS INTEGER)) END,
    tokens_clock = CASE WHEN tokens_at > CAST(new.updated_at AS INTEGER)
                             AND NOT (tokens_clock IS new.claim_clock OR tokens_at - CAST(new.updated_at AS INTEGER) > 600000)
                        THEN tokens_clock ELSE new.claim_clock END;
END;
