// fencelease: leases with fencing tokens, so a stale worker never overwrites a newer result.
// This entry runs on every runtime: the store, its drivers' seam, the HTTP app.
// The Node server and file databases are in `fencelease/node`, the Cloudflare
// Worker in `fencelease/worker`, and what a worker calls in `fencelease/client`.
export type { Driver, Row, Statement } from "./drivers/driver.ts";
export { groupCommit, type GroupCommitOptions } from "./drivers/group-commit.ts";
export { libsqlDriver, type LibsqlDriverOptions } from "./drivers/libsql-client.ts";
export { type AppOptions, createApp } from "./http/app.ts";
export { type Auth, authFromEnv } from "./http/middleware/auth.ts";
export { DEFAULT_LIMITS, type GivenLimits, type Limits } from "./http/shapes.ts";
export type { UiFiles } from "./http/ui.ts";
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
} from "./store/errors.ts";
export type { Health, HealthOptions, HealthReason } from "./store/health.ts";
export type { Job, JobEvent, JobStatus, Lease } from "./store/job.ts";
export { maintain, type Maintained, RETENTION_MS } from "./store/maintenance.ts";
export { type Migration, MigrationChanged, MigrationFailed, migrate } from "./store/migrate.ts";
export { type NoteVerbs, noteVerbs } from "./store/note.ts";
export type { LeaseOutcome } from "./store/refusal.ts";
export type { Fired, FiredJob, Schedule, Schedules, ScheduleSpec, TakenFire } from "./store/schedules.ts";
export { STATUSES } from "./store/sql/lease.ts";
export { cachedTokens, TOKEN_CACHE_MS, type TokenCacheOptions } from "./store/token-cache.ts";
export { type CreatedToken, type NewToken, type Role, ROLES, type TokenInfo, type Tokens, type TokenStore } from "./store/tokens.ts";
export type { QueueStats } from "./store/stats.ts";
export type { KeyHeldBack, KeysPage, KeysRequest, KeyStats, TopKey } from "./store/key-stats.ts";
export type {
  CancelRequest,
  ClaimedLeases,
  ClaimNextRequest,
  ClaimRequest,
  CompleteManyRequest,
  CompleteRequest,
  EnqueueManyRequest,
  EnqueueRequest,
  EventsRequest,
  ExpireRequest,
  FailRequest,
  HeldLease,
  HousekeepingOptions,
  LeaseCheck,
  ListRequest,
  NewJob,
  NextClaim,
  Page,
  PurgeRequest,
  QueueLimits,
  QueueLimitsRequest,
  QueueSettings,
  RenewManyRequest,
  RenewRequest,
  Settled,
} from "./store/shapes.ts";
export { LeaseStore } from "./store/store.ts";
export type { Waits } from "./wait/long-poll.ts";
