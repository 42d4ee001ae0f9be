-- A clock that steps back (issue 19): the spend of migrations/0009 kept its
-- count at max(tokens_at, now), so after an NTP correction of an hour back a
-- bucket refilled nothing until the clock came back to its last count, an hour
-- later. Yet a clock behind the count may also be another server's, running
-- behind the one that counted: moving the count back to it would be a refill
-- for the server ahead, at every claim of the two in turn.
--
-- So the bucket keeps which clock counted (tokens_clock: the id of the
-- LeaseStore, src/store/step-back.ts), and a claim writes its store's clock id
-- on the job it takes (claim_clock), where this trigger reads it. A spend moves
-- the count back to `now` when `now` is behind a count its own clock made (a
-- step back, of any size), or more than 600,000 ms (SKEW_LIMIT_MS) behind
-- another clock's (a broken or gone clock); else the count stays at
-- max(tokens_at, now), as before, and a clock behind waits for it. The
-- expressions are `countedFrom` and `countedBy` of src/store/sql/bucket.ts:
-- keep them alike. The refill is the same as in 0009. A bucket from before
-- has no tokens_clock, which is no clock's own.
ALTER TABLE queues ADD COLUMN tokens_clock TEXT;
ALTER TABLE jobs ADD COLUMN claim_clock TEXT;

DROP TRIGGER queues_spend_token;

CREATE TRIGGER queues_spend_token AFTER UPDATE OF fence ON jobs
WHEN new.last_event = 'claimed' AND new.fence > old.fence
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
