-- A clock that steps back (issue 19): a schedule stored its next fire as the
-- first after the `now` of the fire (or put) that computed it, so after an NTP
-- correction of an hour back it fired nothing until the clock came round to
-- that time again. planned_at is that `now`: when it is more than 1,000 ms
-- (STEP_BACK_MS in src/store/step-back.ts) ahead of the clock, fireDue plans the
-- next fire again, as the first after the corrected clock, and each fire is
-- still enqueued at most once (its job's id). Rows from before: the later of
-- their last put and last fire, which is when their next fire was computed or
-- after it.
ALTER TABLE schedules ADD COLUMN planned_at INTEGER;
UPDATE schedules SET planned_at = max(updated_at, coalesce(last_fire_at, updated_at));

-- The schedules planned ahead of the clock: a range of this index, read by
-- fireDue with the due ones, so a run with neither reads two index entries.
CREATE INDEX schedules_planned ON schedules (planned_at);
