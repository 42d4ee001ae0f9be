// fencelease: leases with fencing tokens, so a stale worker never overwrites a newer result.
export { claimMany } from "./claim-many.ts";
export { type Driver, libsqlDriver, type Row, type Statement } from "./driver.ts";
export { InvalidArgument } from "./errors.ts";
export type { Job } from "./job.ts";
export { type Migration, migrate } from "./migrate.ts";
export { MIGRATIONS_DIR, readMigrations } from "./migrations-dir.ts";
export { BUSY_TIMEOUT_MS, connect, type OpenOptions, openStore } from "./open.ts";
export { type EnqueueOptions, type Lease, LeaseStore } from "./store.ts";
