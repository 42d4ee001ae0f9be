import type { Context } from "hono";

/**
 * Lets `work` (a ring on its way to a Durable Object) finish after the answer:
 * through `waitUntil` on Workers; on Node it simply runs on. A ring that fails
 * is dropped: the waiters it was for wake at their timer, re-check or deadline.
 */
export function afterAnswer(c: Context, work: void | Promise<void>): void {
  if (!(work instanceof Promise)) return;
  const settled = work.catch((error: unknown) => console.error("fencelease: a ring of the waiters failed", error));
  try {
    c.executionCtx.waitUntil(settled);
  } catch {
    // No execution context (Node): the promise runs to its end anyway.
  }
}
