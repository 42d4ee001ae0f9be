// fencelease: leases with fencing tokens, so a stale worker never overwrites a newer result.
export { claimMany } from "./claim-many.ts";
export { d1Driver } from "./drivers/d1.ts";
export type { Driver, Row, Statement } from "./drivers/driver.ts";
export { groupCommit, type GroupCommitOptions } from "./drivers/group-commit.ts";
export { libsqlDriver, type LibsqlDriverOptions } from "./drivers/libsql-client.ts";
export { libsqlFileDriver, type LibsqlFileDriverOptions } from "./drivers/libsql-file.ts";
export {
  InvalidArgument,
  LeaseLost,
  type LeaseLostReason,
  NotClaimable,
  type NotClaimableReason,
  NotFound,
  type Outcome,
  StorageUnavailable,
  type StorageReason,
  WrongStatus,
} from "./errors.ts";
export { type Health, HEALTH_HOLD_MS, type HealthOptions, type HealthReason, STUCK_AFTER_MS } from "./health.ts";
export { type AppOptions, createApp, jobView } from "./http/app.ts";
export { type Auth, authFromEnv } from "./http/auth.ts";
export { DEFAULT_LIMITS, type Limits } from "./http/schemas.ts";
export { UI_CSP, type UiFiles } from "./http/ui.ts";
export type { Job, JobEvent, JobStatus, Lease } from "./job.ts";
export { CRON_MAX_CHUNKS, CRON_SCHEDULE_CHUNKS, maintain, type Maintained, repeat, RETENTION_MS, SCHEDULE_RECHECK_MS } from "./maintenance.ts";
export { type Migration, migrate } from "./migrate.ts";
export { MIGRATIONS_DIR, readMigrations } from "./migrations-dir.ts";
export { BUSY_TIMEOUT_MS, connect, type OpenOptions, openStore, reconnect, STATEMENT_TIMEOUT_MS } from "./open.ts";
export { type RunningServer, type ServerConfig, serverConfigFromEnv, startServer } from "./server.ts";
export { MAX_NAME_BYTES as MAX_SCHEDULE_NAME_BYTES, MIN_EVERY_MS } from "./schedule-times.ts";
export { type Fired, type FiredJob, type Schedule, Schedules, type ScheduleSpec } from "./schedules.ts";
export { UI_DIR, uiFilesFromDisk } from "./ui-files.ts";
export { MAX_PROGRESS_BYTES, MAX_REASON_BYTES } from "./validate.ts";
export { type Claimed, localWaits, type WaitingClaim, type Waits } from "./wait/long-poll.ts";
export { MAX_WAITING, RECHECK_MS, WaitRoom, type WaitRoomOptions } from "./wait/wait-room.ts";
export { STATUSES } from "./statements.ts";
export type { QueueStats } from "./stats.ts";
export { type ClaimedLeases, type EnqueueOptions, HOUSEKEEPING_CHUNK, type HousekeepingOptions, LeaseStore, MAX_BURST, MAX_RATE_PER_SECOND, type NewJob, type NextClaim, type Page, type QueueLimits, type QueueSettings, type Settled } from "./store.ts";
export type { LeaseOutcome } from "./refusal.ts";
