import { ScheduleCalls } from "./schedule-calls.ts";
import type { QueueSettings, QueueSettingsRequest, QueueStats } from "./types.ts";

/**
 * The queue calls of LeaseClient (stats, pause, resume and the limits), kept
 * apart so that the client's file stays about leases; LeaseClient gives them
 * its transport (`send`).
 */
export abstract class QueueCalls extends ScheduleCalls {
  /** stats answers, per queue in name order, the jobs by status, the oldest due job's age, and the refused stale writes. */
  async stats(): Promise<QueueStats[]> {
    return (await this.send<{ queues: QueueStats[] }>("GET", "/v1/stats", undefined, "always")).queues;
  }

  /** pause stops claims from handing out the queue's jobs until resume; leases already held go on. Answers its settings. */
  async pause(queue: string): Promise<QueueSettings> {
    return this.send("POST", `${queuePath(queue)}/pause`, undefined, "always");
  }

  /** resume lets claims take the queue's jobs again; answers its settings. */
  async resume(queue: string): Promise<QueueSettings> {
    return this.send("POST", `${queuePath(queue)}/resume`, undefined, "always");
  }

  /**
   * setQueue sets all of the queue's limits at once (null or absent: none):
   * `maxLeased`, and `ratePerSecond` with `burst` (default max(1,
   * ceil(ratePerSecond))); keeps whether it is paused; answers its settings.
   */
  async setQueue(queue: string, settings: QueueSettingsRequest): Promise<QueueSettings> {
    return this.send("PUT", queuePath(queue), settings, "always");
  }

  /** getQueue answers the queue's settings; a queue never set is not paused and has no limits. */
  async getQueue(queue: string): Promise<QueueSettings> {
    return this.send("GET", queuePath(queue), undefined, "always");
  }

  /** listQueues answers the settings of every queue that has settings or jobs, by name. */
  async listQueues(): Promise<QueueSettings[]> {
    return (await this.send<{ queues: QueueSettings[] }>("GET", "/v1/queues", undefined, "always")).queues;
  }
}

/** The path of a queue, its name encoded. */
export function queuePath(queue: string): string {
  return `/v1/queues/${encodeURIComponent(queue)}`;
}
