-- A clock that steps back (issue 19): the spend of migrations/0009 kept its
-- count at max(tokens_at, now), so after an NTP correction of an hour back a
-- bucket refilled nothing until the clock came back to its last count, an hour
-- later. A spend now moves the count to `now` when `now` is more than 1,000 ms
-- (STEP_BACK_MS in src/store/step-back.ts) behind it: the bucket keeps what it
-- holds and refills from the corrected clock. Up to 1,000 ms behind, `now` is
-- taken for another server's clock a little behind, and the count stays, as
-- before, so two servers never count the same ms twice. The expression is
-- `countedFrom` of src/store/sql/bucket.ts: keep the two alike. The refill is
-- the same as in 0009.
DROP TRIGGER queues_spend_token;

CREATE TRIGGER queues_spend_token AFTER UPDATE OF fence ON jobs
WHEN new.last_event = 'claimed' AND new.fence > old.fence
BEGIN
  UPDATE queues SET
    micro_tokens = min(burst * 1000000,
                       micro_tokens + min(max(0, CAST(new.updated_at AS INTEGER) - tokens_at), burst * 1000000 / refill_per_ms + 1) * refill_per_ms)
                   - 1000000,
    tokens_at = CASE WHEN tokens_at - CAST(new.updated_at AS INTEGER) > 1000 THEN CAST(new.updated_at AS INTEGER)
                     ELSE max(tokens_at, CAST(new.updated_at AS INTEGER)) END
  WHERE queue = new.queue AND refill_per_ms IS NOT NULL;
END;
