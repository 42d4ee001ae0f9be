// What the Worker and its Durable Objects share: the bindings and vars, the
// storage mode they choose, and the database they name in D1 mode (Turso/libSQL
// when LIBSQL_DB_URL is set, else D1).
import type { D1Database, DurableObjectNamespace, Fetcher } from "@cloudflare/workers-types";
import { createClient } from "@libsql/client/web";
import { d1Driver } from "../../drivers/d1.ts";
import type { Driver } from "../../drivers/driver.ts";
import { libsqlDriver } from "../../drivers/libsql-client.ts";

/** The Worker's bindings and vars, as wrangler.toml and the secrets set them. */
export type WorkerEnv = {
  DB?: D1Database | undefined;
  LIBSQL_DB_URL?: string | undefined;
  LIBSQL_DB_AUTH_TOKEN?: string | undefined;
  FENCELEASE_TOKENS?: string | undefined;
  FENCELEASE_AUTH?: string | undefined;
  MAX_TTL_MS?: string | undefined;
  MAX_BODY_BYTES?: string | undefined;
  /** How long done, dead and cancelled jobs are kept, in ms; default 7 days. */
  RETENTION_MS?: string | undefined;
  /** The folder src/ui, as static assets: the dashboard and the API docs (wrangler.toml's [assets]). */
  ASSETS?: Fetcher | undefined;
  /** The Durable Objects of the queues, where waiting claims wait (QueueDoorbell); without it, a bounded re-check. */
  DOORBELL?: DurableObjectNamespace | undefined;
  /** The most claims waiting at once in one queue's object (and reads in one isolate); default 10,000. */
  MAX_WAITING?: string | undefined;
  /** Where the jobs live: "d1" (the default: one database, DB or LIBSQL_DB_URL) or "objects" (each queue in its own Durable Object; docs/scale.md). */
  STORAGE?: string | undefined;
  /** Objects mode: the queues' Durable Objects (class QueueObject), one per queue name; typed where it is used (queue-object.ts, objects.ts). */
  QUEUES?: DurableObjectNamespace | undefined;
  /** Objects mode: the directory of ids, queues and schedules (class Directory); typed where it is used (directory.ts). */
  DIRECTORY?: DurableObjectNamespace | undefined;
};

/** The two places the Worker can keep its jobs. */
export type StorageMode = "d1" | "objects";

/** The storage mode STORAGE names: "d1" when unset; anything else than the two is a mistake, said at once. */
export function storageMode(env: WorkerEnv): StorageMode {
  const mode = env.STORAGE ?? "d1";
  if (mode !== "d1" && mode !== "objects") throw new Error(`STORAGE must be "d1" or "objects", got ${JSON.stringify(mode)}`);
  if (mode === "objects" && (!env.QUEUES || !env.DIRECTORY)) throw new Error('STORAGE = "objects" needs the Durable Object bindings QUEUES (class QueueObject) and DIRECTORY (class Directory): see wrangler.toml');
  return mode;
}

// One libSQL client per isolate and URL: it keeps its HTTP connection warm between requests.
const libsqlClients = new Map<string, ReturnType<typeof createClient>>();

/** The database the env names: Turso/libSQL when LIBSQL_DB_URL is set, else the D1 binding DB. */
export function driverFor(env: WorkerEnv): Driver {
  if (env.LIBSQL_DB_URL) {
    let client = libsqlClients.get(env.LIBSQL_DB_URL);
    if (!client) {
      client = createClient({ url: env.LIBSQL_DB_URL, authToken: env.LIBSQL_DB_AUTH_TOKEN });
      libsqlClients.set(env.LIBSQL_DB_URL, client);
    }
    return { ...libsqlDriver(client), close() {} }; // the client outlives the request
  }
  if (env.DB) return d1Driver(env.DB);
  throw new Error("no database: bind a D1 database as DB in wrangler.toml, or set LIBSQL_DB_URL");
}

/** A var that holds a number, or undefined when it is unset or empty. */
export function number(value: string | undefined): number | undefined {
  return value === undefined || value === "" ? undefined : Number(value);
}
