import { deliver, type DeliverOptions, type DeliveryReport } from "./deliver.ts";

// Push in rounds, for a caller that runs once and ends: the Worker's request
// that enqueued (through waitUntil), and its cron for the deliveries due
// later (retries, backoffs, Retry-After). The Node server pushes from a
// dispatcher that waits in its WaitRoom instead (dispatcher.ts); both claim
// with store.push.claim and deliver with deliver().

/**
 * pushDue claims up to `limit` due jobs of a pushed queue (within its
 * maxInFlight, decided in the claim) and delivers them all at once; answers
 * their reports: none when nothing is due, no delivery may start, or the
 * queue has no endpoint.
 */
export async function pushDue(queue: string, options: DeliverOptions & { limit: number }): Promise<DeliveryReport[]> {
  const { leases, target } = await options.store.push.claim(queue, { limit: options.limit, now: options.clock() });
  if (target === null) return [];
  return Promise.all(leases.map((lease) => deliver(lease, target, options)));
}

/**
 * pushWhileDue delivers the due jobs of a pushed queue in rounds, for a
 * caller that must be done by `endBy` (a performance.now() time): a claim of
 * up to `first` jobs, then of up to `limit`, each round delivered at once and
 * the next claimed when it has ended, so that the slots a round frees are
 * taken again. It stops when a claim takes none (nothing is due, or every
 * slot is held: whoever holds them claims again when they end, else the cron
 * or the alarm does) or when the next round could not end by `endBy`, each of
 * its deliveries waiting up to the queue's timeoutMs; the first round always
 * runs. No delivery waits longer than `maxTimeoutMs`, if given, whatever its
 * queue's timeoutMs. Answers every report.
 */
export async function pushWhileDue(queue: string, options: DeliverOptions & { first: number; limit: number; endBy: number; maxTimeoutMs?: number }): Promise<DeliveryReport[]> {
  const reports: DeliveryReport[] = [];
  for (let limit = options.first; ; limit = options.limit) {
    const { leases, target } = await options.store.push.claim(queue, { limit, now: options.clock() });
    if (target === null || leases.length === 0) return reports;
    const timeoutMs = Math.min(target.timeoutMs, options.maxTimeoutMs ?? Number.POSITIVE_INFINITY);
    reports.push(...(await Promise.all(leases.map((lease) => deliver(lease, { ...target, timeoutMs }, options)))));
    if (performance.now() + timeoutMs > options.endBy) return reports;
  }
}

/**
 * pushAllDue delivers the due jobs of every pushed queue, the queues side by
 * side, each in rounds of up to its maxInFlight at once, until a round takes
 * fewer (nothing more is due, or its maxInFlight is held) or `budgetMs` has
 * passed since it began; answers every report. What is left waits for the
 * next run.
 */
export async function pushAllDue(options: DeliverOptions & { budgetMs: number }): Promise<DeliveryReport[]> {
  const deadline = performance.now() + options.budgetMs;
  const reports: DeliveryReport[] = [];
  await Promise.all((await options.store.push.list()).map(async ({ queue, maxInFlight }) => {
    for (;;) {
      const round = await pushDue(queue, { ...options, limit: maxInFlight });
      reports.push(...round);
      if (round.length < maxInFlight || performance.now() >= deadline) return;
    }
  }));
  return reports;
}
