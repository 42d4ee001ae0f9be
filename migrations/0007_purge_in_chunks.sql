-- Housekeeping in bounded chunks, each found through an index, so that a run
-- with nothing to do is a lookup or two and a large backlog never holds the
-- write lock for long (purge and expireSome in src/store/sql/lease.ts).

-- Done and dead jobs by when they finished: a purge chunk is the first rows.
CREATE INDEX jobs_finished ON jobs (updated_at) WHERE done = 1;

-- Deletions by when they happened: a deleted job's history is purged once its
-- deletion is older than the retention (before, every event was read to find
-- the events of jobs that no longer exist).
CREATE INDEX events_deleted ON events (at) WHERE kind = 'deleted';
