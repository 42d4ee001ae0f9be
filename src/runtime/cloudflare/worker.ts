// The Cloudflare Worker, in the storage mode STORAGE names (docs/scale.md).
// D1 mode (the default): the same Hono app as the Node server, over Turso/libSQL
// when LIBSQL_DB_URL is set, else over the D1 binding DB; a cron trigger that
// enqueues the jobs of due schedules, ends expired leases and purges old
// finished jobs; and QueueDoorbell, the Durable Object where a queue's waiting
// claims wait. Objects mode: the router (router.ts) over one QueueObject per
// queue, whose alarms do the cron's work.
import type { ExecutionContext, Fetcher, ScheduledController } from "@cloudflare/workers-types";
import type { Driver } from "../../drivers/driver.ts";
import { createApp } from "../../http/app.ts";
import { describeError } from "../../http/errors.ts";
import { authFromEnv } from "../../http/middleware/auth.ts";
import type { UiFiles } from "../../http/ui.ts";
import { CRON_MAX_CHUNKS, maintain, maintainedLine, wakeAfter } from "../../store/maintenance.ts";
import { PUSH_AFTER_WRITE_MS, pushAfterWrites } from "../../push/after-write.ts";
import { pushAllDue } from "../../push/push-due.ts";
import { migrate } from "../../store/migrate.ts";
import { LeaseStore } from "../../store/store.ts";
import { requestWaits, type Waits } from "../../wait/long-poll.ts";
import { durableWaits } from "./queue-doorbell.ts";
import { driverFor, number, storageMode, type WorkerEnv } from "./env.ts";
import { MIGRATIONS } from "./migrations.ts";
import { objectsRouter } from "./router.ts";


/** The dashboard's files, read through the assets binding; the app adds the headers, as on Node. */
function assetFiles(assets: Fetcher): UiFiles {
  return async function readAsset(name) {
    // Any origin will do: the binding serves the folder's files by path.
    const response = await assets.fetch(`https://assets.invalid/${name}`);
    return response.ok ? (response as unknown as Response) : null;
  };
}

/**
 * Where requests with waitMs wait: claims in their queue's Durable Object
 * (DOORBELL), reads in their own request. Without the binding, each waits in
 * its own request, re-checking every second (RECHECK_MS) and at the next due
 * job: a bounded re-check inside the request (see requestWaits).
 */
function waitsFor(env: WorkerEnv, store: LeaseStore): Waits {
  const inRequest = requestWaits(store, Date.now, number(env.MAX_WAITING));
  return env.DOORBELL ? durableWaits(env.DOORBELL, store, inRequest, Date.now) : inRequest;
}

/**
 * How long the cron starts new rounds of push deliveries: those due later
 * than their write (a backoff, a Retry-After, a delivery cut short) go out
 * here, within a minute of being due.
 */
export const CRON_PUSH_BUDGET_MS = 30_000;

const log = (line: string) => console.log(line);

// The app is built once per env object, which a Worker isolate keeps between requests.
const built = new WeakMap<WorkerEnv, { app: ReturnType<typeof createApp>; store: LeaseStore; waits: Waits; schema: Schema }>();
const routers = new WeakMap<WorkerEnv, ReturnType<typeof objectsRouter>>();

function builtFor(env: WorkerEnv) {
  let entry = built.get(env);
  if (!entry) {
    const driver = driverFor(env);
    const store = new LeaseStore(driver);
    const waits = waitsFor(env, store);
    // A write that makes jobs of a pushed queue due delivers them in its own waitUntil, which no delivery may outlast.
    const pushing = pushAfterWrites(waits, { store, clock: Date.now, log, maxTimeoutMs: PUSH_AFTER_WRITE_MS });
    const app = createApp({ store, ...appOptions(env), waits: pushing.waits, push: pushing });
    entry = { app, store, waits, schema: schemaOf(driver) };
    built.set(env, entry);
  }
  return entry;
}

/** What the app is built from in either mode, from the env's vars and bindings. */
function appOptions(env: WorkerEnv) {
  return {
    auth: authFromEnv(env),
    limits: { maxTtlMs: number(env.MAX_TTL_MS), maxBodyBytes: number(env.MAX_BODY_BYTES) },
    log,
    ui: env.ASSETS && assetFiles(env.ASSETS),
  };
}

function routerFor(env: WorkerEnv) {
  let router = routers.get(env);
  if (!router) {
    router = objectsRouter({ env, ...appOptions(env) });
    routers.set(env, router);
  }
  return router;
}

/** Whether the database's schema is up to date, and the one call that brings it there. */
type Schema = { ready: boolean; update: () => Promise<void> };

/**
 * The isolate's first request (or cron run) brings the schema up to date, as
 * Node does at open and each queue's object at its start; later ones only
 * read the flag. A failure is answered to that request and tried again by the
 * next: an edited migration (MigrationChanged) is refused until the file is
 * restored.
 */
function schemaOf(driver: Driver): Schema {
  let running: Promise<void> | undefined;
  const schema: Schema = {
    ready: false,
    update: () =>
      (running ??= migrate(driver, MIGRATIONS).then(
        () => void (schema.ready = true),
        (error: unknown) => {
          running = undefined;
          console.error(`fencelease: the database's schema could not be brought up to date: ${(error as Error)?.message ?? String(error)}`);
          throw error;
        },
      )),
  };
  return schema;
}

/** The answer to a request the schema's update failed for: the app's error body, as its one handler would make it. */
function schemaFailed(error: unknown): Response {
  const { status, code, message, details, headers } = describeError(error);
  return Response.json({ error: { code, message, ...(details && { details }) } }, { status, headers });
}

export default {
  /** Serves the API. */
  fetch(request: Request, env: WorkerEnv, ctx: ExecutionContext): Response | Promise<Response> {
    if (storageMode(env) === "objects") return routerFor(env).fetch(request, env, ctx);
    const { app, schema } = builtFor(env);
    if (schema.ready) return app.fetch(request, env, ctx);
    return schema.update().then(() => app.fetch(request, env, ctx), schemaFailed);
  },

  /**
   * Enqueues the jobs of the schedules due at the trigger's time (a per-minute
   * cron's at its minute), ends expired leases (owner cleared, fence kept, an
   * attempt counted) and purges old done, dead and cancelled jobs; rings the queues
   * whose jobs came or came back; then delivers the due jobs of the pushed
   * queues (for up to CRON_PUSH_BUDGET_MS).
   */
  async scheduled(controller: ScheduledController, env: WorkerEnv): Promise<void> {
    // Objects mode: each queue's object does this at the time it is due, by its alarm.
    if (storageMode(env) === "objects") return;
    const { store, waits, schema } = builtFor(env);
    if (!schema.ready) await schema.update();
    // A bounded part of a large backlog per run, within D1's limits; the next runs take the rest.
    const done = await maintain(store, controller.scheduledTime, number(env.RETENTION_MS), { maxChunks: CRON_MAX_CHUNKS });
    console.info(maintainedLine(done)); // info: `npm run dev` shows it (WRANGLER_LOG=info), where it leaves out the request log's console.log
    await wakeAfter(done, waits);
    const pushed = await pushAllDue({ store, clock: Date.now, waits, log, budgetMs: CRON_PUSH_BUDGET_MS });
    if (pushed.length > 0) console.info(`fencelease: pushed ${pushed.length} job${pushed.length === 1 ? "" : "s"} (${pushed.filter((report) => report.written === "completed").length} completed)`);
  },
};
