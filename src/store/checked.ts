import type { Statement } from "../drivers/driver.ts";
import { type DedupMode, dedupMode, type EnqueuePlan, planEnqueue } from "./dedup-plan.ts";
import { InvalidArgument } from "./errors.ts";
import type { CancelRequest, ClaimRequest, CompleteRequest, EnqueueRequest, FailRequest, HeldLease, NewJob, RenewRequest, StepRequest } from "./shapes.ts";
import * as sqlClaims from "./sql/claim-next.ts";
import * as sql from "./sql/lease.ts";
import * as sqlCancel from "./sql/cancel.ts";
import * as sqlMany from "./sql/many.ts";
import * as sqlSteps from "./sql/steps.ts";
import * as check from "./validate.ts";

// Each verb's arguments are checked here, before its statements are built, so
// a bad call never reaches the database. `now` is the request's time (see
// timeOf), checked here with the rest.

/** When a job is due: `runAt`, or `delayMs` after `now`, or `now`; both given is refused. */
function dueAt(job: { runAt?: number; delayMs?: number }, now: number): number {
  if (job.runAt !== undefined && job.delayMs !== undefined) throw new InvalidArgument("give runAt or delayMs, not both");
  if (job.delayMs !== undefined) return now + check.duration("delayMs", job.delayMs);
  return check.instant("runAt", job.runAt ?? now);
}

/** The statements of each verb, built from its checked arguments. */
export const checked = {
  enqueue: (id: string, request: EnqueueRequest, at: number): EnqueuePlan => {
    const now = check.instant("now", at);
    const mode = dedupMode("", request);
    const job = {
      id: check.jobId("id", id),
      queue: check.name("queue", request.queue ?? "default"),
      key: check.key("key", request.key),
      payload: check.json("payload", request.payload),
      priority: check.integer("priority", request.priority ?? 0),
      runAt: mode?.kind === "debounce" ? now + mode.debounceMs : dueAt(request, now),
      maxAttempts: check.positiveInt("maxAttempts", request.maxAttempts ?? 25),
      ...check.traceContext("", request.traceparent, request.tracestate),
      now,
    };
    return planEnqueue(job.id, job.queue, job, mode, now, (dedup) => sql.enqueue({ ...job, dedup }));
  },
  enqueueMany: (queue: string, jobs: NewJob[], at: number) => {
    const now = check.instant("now", at);
    const rows = jobs.map((job, i): sqlMany.NewJob => {
      const trace = check.traceContext(`jobs[${i}].`, job.traceparent, job.tracestate);
      const window = dedupMode(`jobs[${i}].`, job, true) as Extract<DedupMode, { kind: "window" }> | null;
      return [
        check.jobId(`jobs[${i}].id`, job.id),
        check.json(`jobs[${i}].payload`, job.payload),
        check.integer(`jobs[${i}].priority`, job.priority ?? 0),
        dueAt(job, now),
        check.positiveInt(`jobs[${i}].maxAttempts`, job.maxAttempts ?? 25),
        trace.traceparent,
        trace.tracestate,
        check.key(`jobs[${i}].key`, job.key),
        window?.key ?? null,
        window === null ? null : now + window.ttlMs,
      ];
    });
    return sqlMany.enqueueMany(check.name("queue", queue), rows, now);
  },
  claim: (id: string, request: ClaimRequest, now: number, clock: string) =>
    sqlClaims.claim(check.name("id", id), check.claimant("owner", request.owner), check.instant("now", now), check.positiveInt("ttlMs", request.ttlMs), clock),
  renew: (id: string, request: RenewRequest, now: number) =>
    sql.renew(
      check.name("id", id),
      check.name("owner", request.owner),
      check.positiveInt("fence", request.fence),
      check.instant("now", now),
      check.positiveInt("ttlMs", request.ttlMs),
      check.progress("progress", request.progress),
    ),
  complete: (id: string, request: CompleteRequest, now: number, next?: Statement) =>
    sql.complete(check.name("id", id), check.name("owner", request.owner), check.positiveInt("fence", request.fence), check.instant("now", now), check.result("result", request.result), next),
  release: (id: string, request: HeldLease, now: number) =>
    sql.release(check.name("id", id), check.name("owner", request.owner), check.positiveInt("fence", request.fence), check.instant("now", now)),
  step: (id: string, name: string, request: StepRequest, now: number) => {
    const step = { id: check.name("id", id), name: check.stepName("name", name), owner: check.name("owner", request.owner), fence: check.positiveInt("fence", request.fence), now: check.instant("now", now) };
    const result = check.json("result", request.result);
    if (result === null) throw new InvalidArgument("result is required: any JSON value (null for none)");
    return sqlSteps.recordStep({ ...step, result, bytes: check.utf8Bytes(result) });
  },
  cancel: (id: string, request: CancelRequest, now: number) =>
    sqlCancel.cancel(check.name("id", id), check.name("by", request.by ?? "api"), check.shortText("reason", request.reason, check.MAX_REASON_BYTES), check.instant("now", now)),
  fail: (id: string, request: FailRequest, now: number, jitter: number) =>
    sql.fail({
      id: check.name("id", id),
      owner: check.name("owner", request.owner),
      fence: check.positiveInt("fence", request.fence),
      now: check.instant("now", now),
      error: check.text("error", request.error),
      retryInMs: request.retryInMs === undefined ? null : check.duration("retryInMs", request.retryInMs),
      jitter,
    }),
};
