import { prometheusText, type RequestMetrics } from "../../http/metrics.ts";
import type { QueueStats } from "../../store/stats.ts";
import { byCodePoint } from "../../store/search.ts";
import { inScope } from "../../store/tokens.ts";
import { allowedQueue, bodyQueue, type Call, type Objects } from "./objects.ts";
import { NO_QUEUE } from "./queue-object.ts";

// The calls of objects mode that span queues: each asks several queues'
// objects and puts their answers together as one database would have
// answered. Every part is its own object's transaction; docs/scale.md says
// what that changes.

/** The header of a many-lease answer that says in how many transactions (one per queue) it was decided. */
export const TRANSACTIONS_HEADER = "Fencelease-Transactions";

/** The same GET to the object of each queue (NO_QUEUE when there is none, which answers for the empty set); the first refusal, or every answer. */
async function askEach<T>(objects: Objects, call: Call, queues: string[]): Promise<T[] | Response> {
  const responses = await Promise.all((queues.length === 0 ? [NO_QUEUE] : queues).map((queue) => objects.send(queue, call)));
  const refused = responses.find((response) => !response.ok);
  if (refused) return refused;
  return Promise.all(responses.map((response) => response.json() as Promise<T>));
}

/** Those of `queues` the call's token may see (none for a call without a token: the open routes ask no queue). */
function seenQueues(call: Call, queues: string[]): string[] {
  return queues.filter((queue) => call.grant !== undefined && inScope(call.grant.queues, queue));
}

/** GET /v1/stats: every queue's numbers, by name. */
export async function stats(objects: Objects, call: Call): Promise<Response> {
  const merged = await allStats(objects, call);
  return merged instanceof Response ? merged : Response.json({ queues: merged });
}

/**
 * GET /metrics: every queue's numbers in the Prometheus format, as /v1/stats
 * gives them, and the push deliveries of each queue the token sees, asked of
 * its object beside them, and the router's request histogram.
 */
export async function metrics(objects: Objects, call: Call, requests: RequestMetrics): Promise<Response> {
  const statsCall = { ...call, request: new Request(new URL("/v1/stats", call.request.url), call.request) };
  const queues = await objects.queues();
  const seen = seenQueues(call, queues);
  const [merged, push] = await Promise.all([allStats(objects, statsCall, queues), Promise.all(seen.map((queue) => objects.pushStats(queue)))]);
  if (merged instanceof Response) return merged;
  const pushed = push.flat().sort((a, b) => byCodePoint(a.queue, b.queue));
  return new Response(prometheusText(merged, { push: pushed, requests }), { headers: { "Content-Type": "text/plain; version=0.0.4" } });
}

async function allStats(objects: Objects, call: Call, queues?: string[]): Promise<QueueStats[] | Response> {
  const answers = await askEach<{ queues: QueueStats[] }>(objects, call, queues ?? (await objects.queues()));
  if (answers instanceof Response) return answers;
  return answers.flatMap((answer) => answer.queues).sort((a, b) => byCodePoint(a.queue, b.queue));
}

/** GET /v1/queues: every queue's settings, by name. */
export async function queueList(objects: Objects, call: Call): Promise<Response> {
  const answers = await askEach<{ queues: { queue: string }[] }>(objects, call, await objects.queues());
  if (answers instanceof Response) return answers;
  return Response.json({ queues: answers.flatMap((answer) => answer.queues).sort((a, b) => byCodePoint(a.queue, b.queue)) });
}

/** GET /v1/push: the push settings of every pushed queue, by name. */
export async function pushList(objects: Objects, call: Call): Promise<Response> {
  const answers = await askEach<{ endpoints: { queue: string }[] }>(objects, call, await objects.queues());
  if (answers instanceof Response) return answers;
  return Response.json({ endpoints: answers.flatMap((answer) => answer.endpoints).sort((a, b) => byCodePoint(a.queue, b.queue)) });
}

/** GET /v1/schedules: every schedule, by name, from the queues that hold one. */
export async function scheduleList(objects: Objects, call: Call): Promise<Response> {
  const answers = await askEach<{ schedules: { name: string }[] }>(objects, call, await objects.registry.scheduleQueues());
  if (answers instanceof Response) return answers;
  return Response.json({ schedules: answers.flatMap((answer) => answer.schedules).sort((a, b) => byCodePoint(a.name, b.name)) });
}

/**
 * GET /v1/jobs without a queue: a page of every queue's jobs in id order.
 * Each queue answers its first `limit` matches after the cursor, and its own
 * cursor when it may have more: its last job, or, when its search stopped at
 * its bound short of a page, the last id it looked at. Every queue has looked
 * at every id up to the lowest of those cursors (`edge`), so the page is the
 * first `limit` of the jobs up to it, and the next cursor its last job when
 * the page is full, else the edge (null when no queue has more): keyset pages,
 * stable while jobs change, as on one database.
 */
export async function jobList(objects: Objects, call: Call): Promise<Response> {
  const url = new URL(call.request.url);
  const queue = url.searchParams.get("queue");
  if (queue !== null) {
    const response = await objects.send(await objects.readable(call, queue), call);
    return response.ok ? learned(objects, response, (body: { jobs: { id: string; queue: string }[] }) => body.jobs) : response;
  }
  // Only the queues the token sees are asked: each reads only what the token sees, so whether there is more is theirs alone to say.
  const answers = await askEach<{ jobs: { id: string; queue: string }[]; nextCursor: string | null }>(objects, call, seenQueues(call, await objects.queues()));
  if (answers instanceof Response) return answers;
  const limit = Number(url.searchParams.get("limit") ?? 50); // checked by every queue's app already
  const edge = answers.flatMap((answer) => (answer.nextCursor === null ? [] : [answer.nextCursor])).sort(byCodePoint)[0] ?? null;
  const seen = answers.flatMap((answer) => answer.jobs).filter((job) => edge === null || byCodePoint(job.id, edge) <= 0).sort((a, b) => byCodePoint(a.id, b.id));
  const jobs = seen.slice(0, limit);
  for (const job of jobs) objects.learn(job.id, job.queue);
  return Response.json({ jobs, nextCursor: seen.length > limit ? jobs.at(-1)!.id : edge });
}

/** Remembers the queue of each job an answer carries; answers the response as it came. */
export async function learned<T>(objects: Objects, response: Response, jobsOf: (body: T) => { id: string; queue: string }[]): Promise<Response> {
  for (const job of jobsOf((await response.clone().json()) as T)) objects.learn(job.id, job.queue);
  return response;
}

type Lease = { id: string };
type Outcome = { id: string; error?: { code: string } };
type ManyAnswer = { leases?: unknown[]; completed?: Outcome[] };

/**
 * POST /v1/leases/renew and /v1/leases/complete, whose leases may belong to
 * several queues: split per queue, each part one transaction of its queue's
 * object, answered in the order given. The first part sent carries the whole
 * body, so that its app checks every lease and `next` before anything is
 * written (a body it refuses is answered as it is, nothing written anywhere);
 * it takes `next` (sent to next.queue's object, which is that part) and
 * answers not_found for the leases it does not hold, which the other parts,
 * sent at once after it, answer instead. A part that fails answers each of
 * its leases with its error (outcome unknown); the others stand. The answer
 * says in its TRANSACTIONS_HEADER in how many transactions it was decided.
 */
export async function manyLeases(objects: Objects, call: Call, outcomesOf: "leases" | "completed"): Promise<Response> {
  const body = parseJson(call.body) as { leases?: unknown; next?: { queue?: unknown } } | undefined;
  const leases = Array.isArray(body?.leases) ? (body.leases as Lease[]) : null;
  // A body too broken to split: the app of the object that holds no queue says what is wrong.
  if (leases === null || leases.some((lease) => typeof lease?.id !== "string")) return objects.send(NO_QUEUE, call);
  const ids = leases.map((lease) => lease.id);
  const located = await objects.locate(ids);
  const nextQueue = body!.next?.queue === undefined ? undefined : allowedQueue(call, "work", bodyQueue(body!.next.queue));
  const parts = groupBy(ids, (id) => located.get(id));
  const first = nextQueue ?? [...parts].sort((a, b) => b[1].length - a[1].length)[0]?.[0] ?? NO_QUEUE;

  const head = await objects.send(first, call);
  if (!head.ok) return head;
  const answer = (await head.json()) as ManyAnswer;
  const outcomes = answer[outcomesOf] as Outcome[];
  let transactions = 1;
  const sendPart = async (queue: string, indexes: number[]) => {
    const part = JSON.stringify({ ...body, leases: indexes.map((i) => leases[i]), next: undefined });
    const response = await objects.send(queue, call, part);
    transactions++;
    const answered = response.ok ? ((await response.json()) as ManyAnswer)[outcomesOf] : failed(await response.json(), indexes.length);
    indexes.forEach((i, n) => (outcomes[i] = { ...(answered![n] as Outcome), id: ids[i]! }));
  };
  await Promise.all([...parts].filter(([queue]) => queue !== first).map(([queue, partIds]) => sendPart(queue, partIds.map((id) => ids.indexOf(id)))));

  // A queue remembered out of date (the job deleted and enqueued again elsewhere): the directory says where it is now.
  const stale = ids.filter((id, i) => outcomes[i]?.error?.code === "not_found" && objects.remembers(id));
  if (stale.length > 0) {
    for (const id of stale) objects.forget(id);
    const moved = await objects.locate(stale, true);
    const again = groupBy(stale.filter((id) => moved.has(id) && moved.get(id) !== located.get(id)), (id) => moved.get(id));
    await Promise.all([...again].map(([queue, partIds]) => sendPart(queue, partIds.map((id) => ids.indexOf(id)))));
  }
  for (const lease of (answer.leases ?? []) as { job?: { id: string; queue: string } }[]) if (lease.job) objects.learn(lease.job.id, lease.job.queue);
  return Response.json(answer, { headers: { [TRANSACTIONS_HEADER]: String(transactions) } });
}

/** The outcome of each lease of a part that failed as a whole: the part's error, outcome unknown. */
function failed(refusal: unknown, count: number): Outcome[] {
  const error = (refusal as { error?: { code: string } }).error ?? { code: "unavailable", message: "the queue's object failed" };
  return Array.from({ length: count }, () => ({ id: "", error }));
}

/** Ids grouped by a key (undefined: left out), in the order first met. */
function groupBy(ids: string[], key: (id: string) => string | undefined): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const id of ids) {
    const group = key(id);
    if (group === undefined) continue;
    if (!groups.has(group)) groups.set(group, []);
    groups.get(group)!.push(id);
  }
  return groups;
}

/** The body as JSON, or undefined when it is not. */
export function parseJson(body: Call["body"]): unknown {
  try {
    return JSON.parse(typeof body === "string" ? body : new TextDecoder().decode(body ?? new ArrayBuffer(0)));
  } catch {
    return undefined;
  }
}
