// fencelease/node: the service on Node. A store over a libSQL file or server,
// the HTTP server with its timers, and the migrations and dashboard files that
// ship with the package.
export { libsqlFileDriver, type LibsqlFileDriverOptions } from "./drivers/libsql-file.ts";
export { MIGRATIONS_DIR, readMigrations } from "./runtime/node/migrations-dir.ts";
export { BUSY_TIMEOUT_MS, connect, type OpenOptions, openStore, reconnect, STATEMENT_TIMEOUT_MS } from "./runtime/node/open.ts";
export { type RunningServer, type ServerConfig, serverConfigFromEnv, startServer } from "./runtime/node/server.ts";
export { UI_DIR, uiFilesFromDisk } from "./runtime/node/ui-files.ts";
