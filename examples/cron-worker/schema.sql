-- The downstream table the cron Worker writes to. Each row remembers the fence
-- of the write that made it, and a write with a lower fence changes nothing.
CREATE TABLE IF NOT EXISTS invoice_totals (
  job_id TEXT PRIMARY KEY,
  fence  INTEGER NOT NULL,
  total  INTEGER NOT NULL
);
