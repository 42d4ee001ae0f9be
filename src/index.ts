// fencelease: leases with fencing tokens, so a stale worker never overwrites a newer result.
export { claimMany } from "./claim-many.ts";
export { d1Driver } from "./d1-driver.ts";
export { type Driver, libsqlDriver, type LibsqlDriverOptions, type Row, type Statement } from "./driver.ts";
export {
  InvalidArgument,
  LeaseLost,
  type LeaseLostReason,
  NotClaimable,
  type NotClaimableReason,
  NotFound,
  StorageUnavailable,
  WrongStatus,
} from "./errors.ts";
export { groupCommit, type GroupCommitOptions } from "./group-commit.ts";
export { type AppOptions, createApp, jobView } from "./http/app.ts";
export { type Auth, authFromEnv } from "./http/auth.ts";
export { DEFAULT_LIMITS, type Limits } from "./http/schemas.ts";
export type { Job, JobEvent, JobStatus } from "./job.ts";
export { maintain, type Maintained, RETENTION_MS } from "./maintenance.ts";
export { type Migration, migrate } from "./migrate.ts";
export { MIGRATIONS_DIR, readMigrations } from "./migrations-dir.ts";
export { BUSY_TIMEOUT_MS, connect, type OpenOptions, openStore, reconnect } from "./open.ts";
export { type RunningServer, type ServerConfig, serverConfigFromEnv, startServer } from "./server.ts";
export { STATUSES } from "./statements.ts";
export type { QueueStats } from "./stats.ts";
export { type EnqueueOptions, type Lease, LeaseStore, type Page } from "./store.ts";
