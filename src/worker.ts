// The Cloudflare Worker: the same Hono app as the Node server, over Turso/libSQL
// when LIBSQL_DB_URL is set, else over the D1 binding DB; and a cron trigger
// that ends expired leases and purges old finished jobs.
import type { D1Database, ExecutionContext, Fetcher, ScheduledController } from "@cloudflare/workers-types";
import { createClient } from "@libsql/client/web";
import { d1Driver } from "./drivers/d1.ts";
import type { Driver } from "./drivers/driver.ts";
import { libsqlDriver } from "./drivers/libsql-client.ts";
import { createApp } from "./http/app.ts";
import { authFromEnv } from "./http/auth.ts";
import type { UiFiles } from "./http/ui.ts";
import { maintain, maintainedLine } from "./maintenance.ts";
import { LeaseStore } from "./store.ts";

/** The Worker's bindings and vars, as wrangler.toml and the secrets set them. */
export type WorkerEnv = {
  DB?: D1Database;
  LIBSQL_DB_URL?: string;
  LIBSQL_DB_AUTH_TOKEN?: string;
  FENCELEASE_TOKENS?: string;
  FENCELEASE_AUTH?: string;
  MAX_TTL_MS?: string;
  MAX_BODY_BYTES?: string;
  /** How long done and dead jobs are kept, in ms; default 7 days. */
  RETENTION_MS?: string;
  /** The folder src/ui, as static assets: the dashboard and the API docs (wrangler.toml's [assets]). */
  ASSETS?: Fetcher;
};

// One libSQL client per isolate and URL: it keeps its HTTP connection warm between requests.
const libsqlClients = new Map<string, ReturnType<typeof createClient>>();

function driverFor(env: WorkerEnv): Driver {
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

/** The dashboard's files, read through the assets binding; the app adds the headers, as on Node. */
function assetFiles(assets: Fetcher): UiFiles {
  return async function readAsset(name) {
    // Any origin will do: the binding serves the folder's files by path.
    const response = await assets.fetch(`https://assets.invalid/${name}`);
    return response.ok ? (response as unknown as Response) : null;
  };
}

function number(value: string | undefined): number | undefined {
  return value === undefined || value === "" ? undefined : Number(value);
}

// The app is built once per env object, which a Worker isolate keeps between requests.
const apps = new WeakMap<WorkerEnv, ReturnType<typeof createApp>>();

function appFor(env: WorkerEnv) {
  let app = apps.get(env);
  if (!app) {
    app = buildApp(env);
    apps.set(env, app);
  }
  return app;
}

function buildApp(env: WorkerEnv) {
  return createApp({
    store: new LeaseStore(driverFor(env)),
    auth: authFromEnv(env),
    limits: { maxTtlMs: number(env.MAX_TTL_MS), maxBodyBytes: number(env.MAX_BODY_BYTES) },
    log: (line) => console.log(line),
    ui: env.ASSETS && assetFiles(env.ASSETS),
  });
}

export default {
  /** Serves the API. */
  fetch(request: Request, env: WorkerEnv, ctx: ExecutionContext): Response | Promise<Response> {
    return appFor(env).fetch(request, env, ctx);
  },

  /** Ends expired leases (owner cleared, fence kept, an attempt counted) and purges old done and dead jobs. */
  async scheduled(controller: ScheduledController, env: WorkerEnv): Promise<void> {
    const store = new LeaseStore(driverFor(env));
    console.log(maintainedLine(await maintain(store, controller.scheduledTime, number(env.RETENTION_MS))));
  },
};
