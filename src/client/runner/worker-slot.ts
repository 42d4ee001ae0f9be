import type { JobSpan } from "../../tracing/job-span.ts";
import type { LostLease } from "../lease-keeper.ts";
import type { Lease } from "../types.ts";

/** One job in a worker runner's hand, from its claim until its handler has returned and its lease has ended. */
export type Slot = {
  lease: Lease;
  controller: AbortController;
  result?: unknown;
  lost?: LostLease;
  /** Send without `next`: a call with `next` carrying this result did not get through. */
  noNext?: boolean;
  /** Send alone: a call carrying this result among others was refused as a whole. */
  alone?: boolean;
  /** The job's span, from the lease in hand until it ends (docs/traces.md); null when there is nothing to trace. */
  span: JobSpan | null;
  /** Why its work failed, for its span: the handler's error. */
  failed?: unknown;
};

/** The exponential backoff after `failures` failures in a row: 100 ms doubling, capped at 5 s, times a jitter in [0.5, 1). */
export function backoffMs(failures: number): number {
  return Math.round(Math.min(5_000, 100 * 2 ** failures) * (0.5 + Math.random() / 2));
}
