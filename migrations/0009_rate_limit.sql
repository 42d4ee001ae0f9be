-- The rate limit of a queue (issue 13): a token bucket kept on its `queues`
-- row, decided inside the claim statements (`room` in src/store/sql/lease.ts, with
-- the arithmetic of src/store/sql/bucket.ts) and spent by the trigger below
-- in the claim's own statement, so a limit holds under any race and a queue
-- without a rate costs what it did before (no row, or NULL here: no bucket).
--
-- Exact integer arithmetic, so that a claim at the very millisecond a token
-- is due gets it and one a millisecond earlier does not, on every driver:
--   refill_per_ms  ratePerSecond x 1000, an integer (the rate is kept in steps
--                  of 0.001 per second): the MICRO-tokens one ms adds.
--   micro_tokens   the bucket at `tokens_at`, in millionths of a token.
-- So `elapsed ms x refill_per_ms` is a whole number of micro-tokens, with no
-- rounding to lose or to carry. Floating-point tokens would drift, and whole
-- milli-tokens would drop a remainder at every spend for rates such as 0.3/s.
-- The bucket holds at most burst x 1,000,000; a lease costs 1,000,000.
-- Bounds (checked by the store): rate <= 1,000,000/s and burst <= 10^9, so no
-- product here leaves SQLite's 64-bit integers.
ALTER TABLE queues ADD COLUMN refill_per_ms INTEGER CHECK (refill_per_ms IS NULL OR refill_per_ms > 0);
ALTER TABLE queues ADD COLUMN burst INTEGER CHECK (burst IS NULL OR burst > 0);
ALTER TABLE queues ADD COLUMN micro_tokens INTEGER;
ALTER TABLE queues ADD COLUMN tokens_at INTEGER;

-- A claim spends one token per lease it hands out, in the claim statement
-- itself: every claim (by id, claim-next, the `next` of complete, fail and
-- completeMany) sets the new fence and `last_event = 'claimed'`, with
-- `updated_at` its `now`. The bucket is first refilled up to that instant
-- (the same expression as `refilled` in src/store/sql/bucket.ts: keep the two
-- alike), then charged. The claim took no more leases than the bucket held
-- whole tokens (`room`), so it never goes below zero. A claim that takes
-- nothing writes nothing here; a queue without a rate matches no row.
CREATE TRIGGER queues_spend_token AFTER UPDATE OF fence ON jobs
WHEN new.last_event = 'claimed' AND new.fence > old.fence
BEGIN
  UPDATE queues SET
    micro_tokens = min(burst * 1000000,
                       micro_tokens + min(max(0, CAST(new.updated_at AS INTEGER) - tokens_at), burst * 1000000 / refill_per_ms + 1) * refill_per_ms)
                   - 1000000,
    tokens_at = max(tokens_at, CAST(new.updated_at AS INTEGER))
  WHERE queue = new.queue AND refill_per_ms IS NOT NULL;
END;
