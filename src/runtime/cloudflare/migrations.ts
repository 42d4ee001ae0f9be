/// <reference path="./sql-text.d.ts" />
// The migrations/ folder, bundled into the Worker: the Worker brings its D1, and
// each queue's Durable Object its own SQLite, up to date from the very files the
// Node server applies (src/store/migrate.ts runs them on any driver). A new file
// of the folder needs its line here; test/worker/objects/routes.test.ts
// fails until it has one.
import type { Migration } from "../../store/migrate.ts";
import m0001 from "../../../migrations/0001_jobs.sql";
import m0002 from "../../../migrations/0002_lifecycle.sql";
import m0003 from "../../../migrations/0003_fence_floor.sql";
import m0004 from "../../../migrations/0004_queue_counts.sql";
import m0005 from "../../../migrations/0005_coalesced_events.sql";
import m0006 from "../../../migrations/0006_claim_next_candidates.sql";
import m0007 from "../../../migrations/0007_purge_in_chunks.sql";
import m0008 from "../../../migrations/0008_queue_settings.sql";
import m0009 from "../../../migrations/0009_rate_limit.sql";
import m0010 from "../../../migrations/0010_cancel_progress.sql";
import m0011 from "../../../migrations/0011_schedules.sql";
import m0012 from "../../../migrations/0012_events_without_autoincrement.sql";
import m0013 from "../../../migrations/0013_bucket_follows_clock.sql";
import m0014 from "../../../migrations/0014_schedule_fires.sql";
import m0015 from "../../../migrations/0015_fewer_rows_written.sql";
import m0030 from "../../../migrations/0030_tokens.sql";
import m0031 from "../../../migrations/0031_push.sql";
import m0032 from "../../../migrations/0032_trace_context.sql";
import m0033 from "../../../migrations/0033_due_at_enqueue.sql";
import m0034 from "../../../migrations/0034_keys.sql";
import m0035 from "../../../migrations/0035_dedup.sql";
import m0036 from "../../../migrations/0036_steps.sql";
import m0037 from "../../../migrations/0037_series.sql";

/** Every file of migrations/, by name, in the order they apply. */
export const MIGRATIONS: readonly Migration[] = [
  { name: "0001_jobs.sql", sql: m0001 },
  { name: "0002_lifecycle.sql", sql: m0002 },
  { name: "0003_fence_floor.sql", sql: m0003 },
  { name: "0004_queue_counts.sql", sql: m0004 },
  { name: "0005_coalesced_events.sql", sql: m0005 },
  { name: "0006_claim_next_candidates.sql", sql: m0006 },
  { name: "0007_purge_in_chunks.sql", sql: m0007 },
  { name: "0008_queue_settings.sql", sql: m0008 },
  { name: "0009_rate_limit.sql", sql: m0009 },
  { name: "0010_cancel_progress.sql", sql: m0010 },
  { name: "0011_schedules.sql", sql: m0011 },
  { name: "0012_events_without_autoincrement.sql", sql: m0012 },
  { name: "0013_bucket_follows_clock.sql", sql: m0013 },
  { name: "0014_schedule_fires.sql", sql: m0014 },
  { name: "0015_fewer_rows_written.sql", sql: m0015 },
  { name: "0030_tokens.sql", sql: m0030 },
  { name: "0031_push.sql", sql: m0031 },
  { name: "0032_trace_context.sql", sql: m0032 },
  { name: "0033_due_at_enqueue.sql", sql: m0033 },
  { name: "0034_keys.sql", sql: m0034 },
  { name: "0035_dedup.sql", sql: m0035 },
  { name: "0036_steps.sql", sql: m0036 },
  { name: "0037_series.sql", sql: m0037 },
];
