import type { EnqueueOptions, NewJob } from "./shapes.ts";
import * as sql from "./sql/lease.ts";
import * as sqlCancel from "./sql/cancel.ts";
import * as sqlMany from "./sql/many.ts";
import * as check from "./validate.ts";

// Each verb's arguments are checked here, before its statements are built, so
// a bad call never reaches the database: the statements of the store's verbs.
/** The statements of each verb, built from its checked arguments. */
export const checked = {
  enqueue: (id: string, options: EnqueueOptions) => {
    const now = check.instant("now", options.now ?? Date.now());
    return sql.enqueue({
      id: check.jobId("id", id),
      queue: check.name("queue", options.queue ?? "default"),
      payload: check.json("payload", options.payload),
      priority: check.integer("priority", options.priority ?? 0),
      runAt: check.instant("runAt", options.runAt ?? now),
      maxAttempts: check.positiveInt("maxAttempts", options.maxAttempts ?? 25),
      ...check.traceContext("", options.traceparent, options.tracestate),
      now,
    });
  },
  enqueueMany: (queue: string, jobs: NewJob[], now: number) => {
    check.instant("now", now);
    const rows = jobs.map((job, i): sqlMany.NewJob => {
      const trace = check.traceContext(`jobs[${i}].`, job.traceparent, job.tracestate);
      return [
        check.jobId(`jobs[${i}].id`, job.id),
        check.json("payload", job.payload),
        check.integer("priority", job.priority ?? 0),
        check.instant("runAt", job.runAt ?? now),
        check.positiveInt("maxAttempts", job.maxAttempts ?? 25),
        trace.traceparent,
        trace.tracestate,
      ];
    });
    return sqlMany.enqueueMany(check.name("queue", queue), rows, now);
  },
  claimNext: (queue: string, owner: string, now: number, ttlMs: number, limit: number) =>
    sql.claimNext(check.name("queue", queue), check.name("owner", owner), check.instant("now", now), check.positiveInt("ttlMs", ttlMs), check.positiveInt("limit", limit)),
  claim: (id: string, owner: string, now: number, ttlMs: number) =>
    sql.claim(check.name("id", id), check.name("owner", owner), check.instant("now", now), check.positiveInt("ttlMs", ttlMs)),
  renew: (id: string, owner: string, fence: number, now: number, ttlMs: number, progress?: unknown) =>
    sql.renew(check.name("id", id), check.name("owner", owner), check.positiveInt("fence", fence), check.instant("now", now), check.positiveInt("ttlMs", ttlMs), check.progress("progress", progress)),
  complete: (id: string, owner: string, fence: number, now: number, result: string) =>
    sql.complete(check.name("id", id), check.name("owner", owner), check.positiveInt("fence", fence), check.instant("now", now), check.text("result", result)),
  release: (id: string, owner: string, fence: number, now: number) =>
    sql.release(check.name("id", id), check.name("owner", owner), check.positiveInt("fence", fence), check.instant("now", now)),
  cancel: (id: string, cancel: { by: string; reason?: string | null }, now: number) =>
    sqlCancel.cancel(check.name("id", id), check.name("by", cancel.by), check.shortText("reason", cancel.reason, check.MAX_REASON_BYTES), check.instant("now", now)),
  fail: (id: string, owner: string, fence: number, now: number, error: string, retryInMs: number | undefined, jitter: number) =>
    sql.fail({
      id: check.name("id", id),
      owner: check.name("owner", owner),
      fence: check.positiveInt("fence", fence),
      now: check.instant("now", now),
      error: check.text("error", error),
      retryInMs: retryInMs === undefined ? null : check.instant("retryInMs", retryInMs),
      jitter,
    }),
};
