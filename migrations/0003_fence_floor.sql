-- A fence is never handed out twice for the same id, even after its row is
-- deleted or purged and the id enqueued again. migrations/0001 kept a row per
-- removed id for that (retired_fences), so a database of unique ids never
-- shrank. Instead, one floor: the highest fence of any row ever removed.
-- Enqueue starts every new row at the floor, so the first claim of a re-used
-- id is above every fence that id ever had; on a fresh database the floor is 0.
CREATE TABLE fence_floor (
  one   INTEGER PRIMARY KEY CHECK (one = 1),  -- a single row
  fence INTEGER NOT NULL
);
INSERT INTO fence_floor (one, fence) SELECT 1, coalesce(max(fence), 0) FROM retired_fences;

DROP TRIGGER jobs_retire_fence;
DROP TABLE retired_fences;

-- Whoever deletes a row (delete, purge, or plain SQL) raises the floor to its fence.
CREATE TRIGGER jobs_raise_fence_floor AFTER DELETE ON jobs
BEGIN
  UPDATE fence_floor SET fence = old.fence WHERE fence < old.fence;
END;
