-- Two things a schedule's fire did not say (issue 19).
--
-- A clock that steps back: a schedule stored its next fire as the
-- first after the `now` of the fire (or put) that computed it, so after an NTP
-- correction of an hour back it fired nothing until the clock came round to
-- that time again. planned_at is that `now`, and planned_clock the clock that
-- read it (the id of the LeaseStore, src/store/step-back.ts). fireDue plans the
-- next fire again, as the first after the corrected clock, when its clock is
-- behind a planned_at it read itself (a step back, of any size), or more than
-- 600,000 ms (SKEW_LIMIT_MS) behind another clock's (a broken or gone clock).
-- A clock behind another's by less is one running behind it: it waits, so the
-- runner behind never plans again a fire the runner ahead has done. Each fire
-- is still enqueued at most once (its job's id). Rows from before: the later of
-- their last put and last fire, which is when their next fire was computed or
-- after it, by no clock's own.
ALTER TABLE schedules ADD COLUMN planned_at INTEGER;
ALTER TABLE schedules ADD COLUMN planned_clock TEXT;
UPDATE schedules SET planned_at = max(updated_at, coalesce(last_fire_at, updated_at));

-- The schedules planned ahead of the clock: a range of this index, read by
-- fireDue with the due ones, so a run with neither reads two index entries.
CREATE INDEX schedules_planned ON schedules (planned_at);

-- A fire whose job id is taken: a fire enqueues `{name}@{fire time}` unless a
-- job of that id exists, and then enqueues nothing. last_fire_taken says that
-- the fire at last_fire_at found its id taken (1) or enqueued its job (0);
-- fireDue answers the same and the servers log it. Plain enqueues of ids of
-- that shape are refused (src/store/validate.ts), so a taken id is a fire
-- already enqueued (a clock that stepped back comes round to it again) or a
-- job from before that refusal.
ALTER TABLE schedules ADD COLUMN last_fire_taken INTEGER NOT NULL DEFAULT 0 CHECK (last_fire_taken IN (0, 1));
