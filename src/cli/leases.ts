import type { LeaseClient } from "../client/lease-client.ts";
import type { Job, Lease, LeaseCheck } from "../client/types.ts";
import { at, type Command } from "./command.ts";
import { EXIT, UsageError } from "./exit-codes.ts";
import { type Flags, integer, json, required, requiredInteger } from "./flags.ts";
import { keyLimits } from "./queues.ts";

// The commands of a lease's life: taking it, keeping it, ending it, and asking
// whether a lease is still the current one.

const leaseLine = (lease: Lease) => `claimed ${lease.job.id}: fence ${lease.fence}, until ${at(lease.until)} (owner ${lease.job.owner})`;

const failedLine = (job: Job) =>
  job.status === "dead"
    ? `failed ${job.id}: dead after ${job.attempts} of ${job.maxAttempts} attempts`
    : `failed ${job.id}: attempt ${job.attempts} of ${job.maxAttempts}; due again at ${at(job.runAt)}`;

/** Why a lease is not the current one, after the server's reason (the stale_lease reasons). */
const NOT_CURRENT: Record<NonNullable<LeaseCheck["reason"]>, (answer: LeaseCheck) => string> = {
  expired: (answer) => `it ran out at ${at(answer.until)}`,
  superseded: (answer) => `a newer lease took the job; its fence is ${answer.fence}`,
  not_owner: (answer) => `the job's fence is ${answer.fence}, and that lease is another owner's, or was given back or ended`,
  done: () => "the job is done",
  cancelled: () => "the job was cancelled",
};

/**
 * Why a claim-next that took nothing, with no rate-limit hint, was held back
 * by its queue: paused, at its maxLeased current leases (full), or with jobs
 * queued that wait for their keys (keys: each at its maxLeasedPerKey, or
 * behind an earlier job of an ordered key); null when none, so nothing was
 * due. The server answers only the rate limit's hint, so this reads the
 * queue's settings (and, under a limit, its numbers) after the claim: a
 * person's explanation, not the claim's decision.
 */
async function heldBack(queue: string, client: LeaseClient): Promise<{ blocked: "paused" | "full" | "keys"; text: string } | null> {
  const settings = await client.queues.get(queue);
  if (settings.paused) return { blocked: "paused", text: `nothing claimed: queue ${queue} is paused, and claims take none of its jobs until \`fencelease resume ${queue}\`` };
  const limitsKeys = settings.maxLeasedPerKey !== null || settings.orderedByKey;
  if (settings.maxLeased === null && !limitsKeys) return null;
  const jobs = (await client.queues.stats()).find((stats) => stats.queue === queue)?.jobs;
  const leased = jobs?.leased ?? 0;
  if (settings.maxLeased !== null && leased >= settings.maxLeased) {
    return { blocked: "full", text: `nothing claimed: queue ${queue} is full (maxLeased ${settings.maxLeased}, and ${leased} held); claims take more as leases end` };
  }
  if (!limitsKeys || (jobs?.queued ?? 0) === 0) return null;
  return { blocked: "keys", text: `nothing claimed: the due jobs of queue ${queue} wait for their keys (${keyLimits(settings)}); claims take them as their keys' leases end` };
}

/** The owner and fence of the lease a command speaks for. */
const heldBy = (flags: Flags) => ({ owner: required(flags, "owner", "the lease's owner"), fence: requiredInteger(flags, "fence") });

/** claim, claim-next, renew, complete, step, release, fail and check-lease. */
export const LEASE_COMMANDS: Record<string, Command> = {
  claim: {
    argument: "a job id",
    async run({ arg: id, flags, client }) {
      const lease = await client.claim(id, { owner: required(flags, "owner", "who takes the lease"), ttlMs: requiredInteger(flags, "ttl-ms") });
      return { json: lease, text: leaseLine(lease) };
    },
  },
  "claim-next": {
    argument: "a queue",
    async run({ arg: queue, flags, client }) {
      if (flags.wait === "") throw new UsageError("--wait needs the most ms to wait for a job, up to 30000");
      const waitMs = integer(flags, "wait");
      const request = { owner: required(flags, "owner", "who takes the leases"), ttlMs: requiredInteger(flags, "ttl-ms"), limit: integer(flags, "limit"), waitMs };
      const { leases, retryAfterMs } = await client.claimNextAnswer(queue, request);
      // Stopped short by the queue's rate limit: say when to ask again.
      if (retryAfterMs !== undefined) {
        const limited = `rate limited in queue ${queue}: the next claim is allowed in ${retryAfterMs} ms`;
        return { json: { leases, blocked: "rate_limited", retryAfterMs }, text: [...leases.map(leaseLine), limited].join("\n") };
      }
      if (leases.length > 0) return { json: { leases }, text: leases.map(leaseLine).join("\n") };
      const held = await heldBack(queue, client);
      if (held !== null) return { json: { leases, blocked: held.blocked }, text: held.text };
      return { json: { leases }, text: waitMs ? `nothing came in queue ${queue} within ${waitMs} ms` : `nothing due in queue ${queue}` };
    },
  },
  renew: {
    argument: "a job id",
    async run({ arg: id, flags, client }) {
      const until = await client.renew(id, { ...heldBy(flags), ttlMs: requiredInteger(flags, "ttl-ms"), progress: json(flags, "progress") });
      return { json: { until }, text: `renewed ${id} until ${at(until)}` };
    },
  },
  complete: {
    argument: "a job id",
    async run({ arg: id, flags, client }) {
      const result = json(flags, "result");
      if (result === undefined) throw new UsageError("--result is required: the job's result, as JSON");
      const { job } = await client.complete(id, { ...heldBy(flags), result });
      return { json: { job }, text: `completed ${id} with fence ${job.fence}` };
    },
  },
  step: {
    argument: "a job id",
    second: "the step's name",
    async run({ arg: id, second: name, flags, client }) {
      const result = json(flags, "result");
      if (result === undefined) throw new UsageError("--result is required: the step's result, as JSON");
      const { recorded, step } = await client.step(id, name, { ...heldBy(flags), result });
      const text = recorded
        ? `recorded step ${step.name} of ${id} with fence ${step.fence}`
        : `step ${step.name} of ${id} was recorded already, with fence ${step.fence} at ${at(step.at)}: ${JSON.stringify(step.result)}`;
      return { json: { recorded, step }, text };
    },
  },
  release: {
    argument: "a job id",
    async run({ arg: id, flags, client }) {
      const job = await client.release(id, heldBy(flags));
      return { json: { job }, text: `released ${id}; its fence stays ${job.fence}` };
    },
  },
  fail: {
    argument: "a job id",
    async run({ arg: id, flags, client }) {
      const request = { ...heldBy(flags), error: required(flags, "error", "why the attempt failed"), retryInMs: integer(flags, "retry-in-ms") };
      const { job } = await client.fail(id, request);
      return { json: { job }, text: failedLine(job) };
    },
  },
  "check-lease": {
    argument: "a job id",
    async run({ arg: id, flags, client }) {
      const { owner, fence } = heldBy(flags);
      const answer = await client.checkLease(id, { owner, fence });
      if (answer.current) return { json: answer, text: `${owner}/${fence} is the current lease of ${id}, until ${at(answer.until)}` };
      const why = answer.reason === undefined ? `the job's fence is ${answer.fence}` : `${answer.reason}, ${NOT_CURRENT[answer.reason](answer)}`; // an older server says no reason
      return { json: answer, text: `${owner}/${fence} is not the current lease of ${id}: ${why}`, code: EXIT.refused };
    },
  },
};
