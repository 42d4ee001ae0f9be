import type { Job, Lease } from "../client/types.ts";
import { at, type Command } from "./command.ts";
import { EXIT, UsageError } from "./exit-codes.ts";
import { type Flags, integer, json, required, requiredInteger } from "./flags.ts";

// The commands of a lease's life: taking it, keeping it, ending it, and asking
// whether a lease is still the current one.

const leaseLine = (lease: Lease) => `claimed ${lease.job.id}: fence ${lease.fence}, until ${at(lease.until)} (owner ${lease.job.owner})`;

const failedLine = (job: Job) =>
  job.status === "dead"
    ? `failed ${job.id}: dead after ${job.attempts} of ${job.maxAttempts} attempts`
    : `failed ${job.id}: attempt ${job.attempts} of ${job.maxAttempts}; due again at ${at(job.runAt)}`;

/** The owner and fence of the lease a command speaks for. */
const heldBy = (flags: Flags) => ({ owner: required(flags, "owner", "the lease's owner"), fence: requiredInteger(flags, "fence") });

/** claim, claim-next, renew, complete, release, fail and check-lease. */
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
      const none = waitMs ? `nothing came in queue ${queue} within ${waitMs} ms` : `nothing due in queue ${queue}`;
      // Stopped short by the queue's rate limit: say when to ask again.
      const limited = retryAfterMs === undefined ? "" : `${leases.length === 0 ? "" : "\n"}rate limited in queue ${queue}: the next claim is allowed in ${retryAfterMs} ms`;
      const text = (leases.length === 0 && retryAfterMs === undefined ? none : leases.map(leaseLine).join("\n")) + limited;
      return { json: retryAfterMs === undefined ? { leases } : { leases, retryAfterMs }, text };
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
      return answer.current
        ? { json: answer, text: `${owner}/${fence} is the current lease of ${id}, until ${at(answer.until)}` }
        : { json: answer, text: `${owner}/${fence} is not the current lease of ${id}; the job's fence is ${answer.fence}`, code: EXIT.refused };
    },
  },
};
