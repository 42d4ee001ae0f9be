import { createExecutionContext, createScheduledController, env, runDurableObjectAlarm, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import type { Row } from "../../src/drivers/driver.ts";
import worker from "../../src/worker.ts";
import { hasStorage } from "../../src/runtime/cloudflare/empty-object.ts";
import type { QueueDoorbell } from "../../src/runtime/cloudflare/queue-doorbell.ts";
import type { QueueObject } from "../../src/runtime/cloudflare/queue-object.ts";

// What the Worker's tests need to know of the storage mode their project runs
// in (vitest.config.ts: "workers" is D1 mode, "workers-objects" objects mode),
// so that one test says one thing of both.

/** The storage mode these tests run in. */
export const MODE: "d1" | "objects" = env.STORAGE === "objects" ? "objects" : "d1";

/** The Durable Object of `queue` in objects mode. */
export function queueObject(queue: string): DurableObjectStub {
  return env.QUEUES!.get(env.QUEUES!.idFromName(queue)) as unknown as DurableObjectStub;
}

/** The rows a query answers where `queue` is kept: the D1 database, or the queue's object (none when the object keeps no storage: it holds nothing). */
export async function rows(queue: string, sql: string, ...args: unknown[]): Promise<Row[]> {
  if (MODE === "d1") return (await env.DB.prepare(sql).bind(...args).all<Row>()).results;
  return runInDurableObject(queueObject(queue), (_object, state) => (hasStorage(state.storage as never) ? (state.storage.sql.exec(sql, ...args).toArray() as Row[]) : []));
}

/** The first row a query answers where `queue` is kept, or null. */
export async function firstRow(queue: string, sql: string, ...args: unknown[]): Promise<Row | null> {
  return (await rows(queue, sql, ...args))[0] ?? null;
}

/**
 * The housekeeping due at `now` (the test's clock set to it): in D1 mode the
 * cron trigger, for every queue; in objects mode the alarm of each of
 * `queues`' objects, run now whenever it is armed for. Answers, in objects
 * mode, the queues whose alarm was armed.
 */
export async function housekeeping(now: number, queues: string[]): Promise<string[]> {
  if (MODE === "d1") {
    const ctx = createExecutionContext();
    await worker.scheduled(createScheduledController({ scheduledTime: now }) as never, env);
    await waitOnExecutionContext(ctx);
    return [];
  }
  const rang: string[] = [];
  for (const queue of queues) if (await runDurableObjectAlarm(queueObject(queue))) rang.push(queue);
  return rang;
}

/** How many claims of `queue` wait now: in its doorbell object (D1 mode), or in its own object. */
export function waitingIn(queue: string): Promise<number> {
  if (MODE === "objects") return runInDurableObject(queueObject(queue), (object: QueueObject) => object.waiting);
  const stub = env.DOORBELL!.get(env.DOORBELL!.idFromName(queue));
  return runInDurableObject(stub as never, (doorbell: QueueDoorbell) => doorbell.waiting);
}
