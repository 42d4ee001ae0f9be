import type { Job } from "../store/job.ts";
import type { ChangedJob } from "../store/shapes.ts";
import { isFinished, type Waits } from "./long-poll.ts";

// What a write tells the waiters once it has committed: the HTTP app's routes
// (src/http/) and the client's calls in the same process (src/client/in-process/)
// both ring through it, so a job enqueued either way wakes the same waiters.

/** One promise for what several rings answer, or nothing when none answered one. */
function together(...rings: (void | Promise<void>)[]): void | Promise<void> {
  const pending = rings.filter((ring) => ring instanceof Promise);
  if (pending.length > 0) return Promise.all(pending).then(() => undefined);
}

/**
 * What the app's writes tell the waiters, once their batch has committed:
 * which jobs became claimable now or later, and which finished.
 */
export function wakeWith(waits: Waits) {
  return {
    /** Jobs created in `queue` with these run_at: those due at `now` ring, the earliest later one sets the timer. */
    enqueued(queue: string, runAts: number[], now: number): void | Promise<void> {
      const due = runAts.filter((at) => at <= now).length;
      const later = runAts.filter((at) => at > now);
      if (due === 0 && later.length === 0) return;
      return waits.claimable(queue, due, later.length > 0 ? Math.min(...later) : undefined);
    },

    /**
     * A job whose lease (of `owner`) a release or fail ended, or that a retry
     * queued (no owner): claimable now (which rings), or later, or finished
     * (dead); in those two the slot its lease held is free now. Its status,
     * as the write answered it, says which: a job due at its enqueue is
     * queued even with its runAt ahead of a clock that stepped back since.
     */
    settled(job: Job, owner?: string): void | Promise<void> {
      if (isFinished(job)) return together(owner === undefined ? undefined : waits.ended(job.queue, owner), waits.finished([job.id]));
      if (job.status !== "scheduled") return waits.claimable(job.queue, 1);
      return together(owner === undefined ? undefined : waits.ended(job.queue, owner), waits.claimable(job.queue, 0, job.runAt));
    },

    /** Leases of `owner` in these queues ended by completions: a claim that a queue's maxLeased (or maxInFlight) held back looks again. */
    ended(queues: Iterable<string>, owner: string): void | Promise<void> {
      return together(...[...queues].map((queue) => waits.ended(queue, owner)));
    },

    /** A queue resumed or given a new limit: its waiters look again, as many as there may be jobs for. */
    queueOpened(queue: string): void | Promise<void> {
      return waits.claimable(queue, "some");
    },

    /**
     * A job cancelled: whoever waits for its result reads it again. A cancel
     * keeps the owner and until, so the job says whether it ended a current
     * lease: that lease no longer takes one of its queue's maxLeased slots, and
     * one waiter of the queue looks again.
     */
    cancelled(job: Job, now: number): void | Promise<void> {
      waits.finished([job.id]);
      if (job.owner !== null && job.until > now) return waits.claimable(job.queue, "some");
    },

    /** Jobs done, dead, cancelled or deleted: whoever waits for their results reads them again. */
    finished(ids: string[]): void {
      if (ids.length > 0) waits.finished(ids);
    },

    /**
     * The jobs a bulk action changed, rung as their single actions ring them,
     * but once a queue: a retry's jobs are claimable (the due ones now, the
     * others, held back by their keys, at their turn); a cancel's and a
     * delete's are finished, and a cancel that ended current leases frees
     * their queues' slots.
     */
    bulk(action: "retry" | "cancel" | "delete", jobs: ChangedJob[], now: number): void | Promise<void> {
      if (action !== "retry") this.finished(jobs.map((job) => job.id));
      const due = new Map<string, number>(); // per queue: how many jobs are claimable now
      for (const job of jobs) {
        if (action === "retry") due.set(job.queue, (due.get(job.queue) ?? 0) + (job.status === "queued" ? 1 : 0));
        else if (action === "cancel" && job.owner !== null && job.until > now) due.set(job.queue, 0);
      }
      return together(...[...due].map(([queue, count]) => waits.claimable(queue, action === "cancel" ? "some" : count)));
    },
  };
}
