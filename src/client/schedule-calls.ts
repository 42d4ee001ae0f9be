import type { Schedule, ScheduleRequest } from "./types.ts";

/**
 * Whether a call may be sent again after a failure whose outcome is unknown.
 * "always": repeating it is harmless (a read; a renew; a complete, which the
 * server treats as idempotent; an enqueue of the same id; a put of a schedule
 * or of a queue's settings). "if-unsent": only when the first attempt is known
 * not to have been applied (a claim; a release or a fail, whose repeat is
 * refused once the lease is gone; a retry, refused once the job is no longer
 * dead; a delete, answered 404 once it is gone).
 */
export type Repeat = "always" | "if-unsent";

/**
 * The schedule calls of LeaseClient, kept apart so that the client's file
 * stays about leases; LeaseClient gives them its transport (`send`).
 */
export abstract class ScheduleCalls {
  /** Sends one call, retrying what may be retried, and answers its JSON or throws its typed error. */
  protected abstract send<T>(method: string, path: string, body: unknown, repeat: Repeat): Promise<T>;

  /**
   * putSchedule creates or replaces a recurring schedule: each fire (of
   * `cron`, read in `timezone`, or every `everyMs`) enqueues the job
   * `{name}@{fire time as ISO 8601}` in `queue`. Answers the schedule, its
   * `nextFireAt` the first fire after now. InvalidRequestError names a bad field.
   */
  putSchedule(name: string, request: ScheduleRequest): Promise<Schedule> {
    return this.send("PUT", schedulePath(name), request, "always");
  }

  /** getSchedule answers a schedule; NotFoundError if there is none of that name. */
  getSchedule(name: string): Promise<Schedule> {
    return this.send("GET", schedulePath(name), undefined, "always");
  }

  /** listSchedules answers every schedule, by name. */
  async listSchedules(): Promise<Schedule[]> {
    return (await this.send<{ schedules: Schedule[] }>("GET", "/v1/schedules", undefined, "always")).schedules;
  }

  /** deleteSchedule deletes a schedule, which never fires again (its jobs stay); NotFoundError if there is none. */
  async deleteSchedule(name: string): Promise<void> {
    await this.send("DELETE", schedulePath(name), undefined, "if-unsent");
  }
}

/** The path of a schedule, its name encoded. */
function schedulePath(name: string): string {
  return `/v1/schedules/${encodeURIComponent(name)}`;
}
