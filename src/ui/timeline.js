// @ts-check
// A job's history as lease generations: the view that explains fencing. Each
// claim opens a generation with the next fence; its renews and its end join it;
// every refused write is shown beside the lease it lost to (the one current when
// it was refused), presented owner and fence against the current ones, and is
// noted in the generation that sent it.
import { h } from "./dom.js";
import { moment, offset } from "./format.js";

/**
 * An event of GET /v1/jobs/{id}/events; `count` and `lastAt`, when the server
 * sends them, say that repeats of the same event were folded into one.
 * @typedef {{ seq: number, at: number, kind: string, action: string | null, owner: string | null,
 *   fence: number | null, currentOwner: string | null, currentFence: number | null, error: string | null,
 *   progress?: unknown, count?: number, lastAt?: number, httpStatus?: number | null, durationMs?: number | null }} JobEvent
 * @typedef {{ fence: number, owner: string | null, claim: JobEvent, steps: JobEvent[], refused: JobEvent[], late: JobEvent[] }} Generation
 * @typedef {{ generation: Generation } | { event: JobEvent }} Entry
 * @typedef {{ result: unknown, fence: number, at: number }} StepRecord
 * @typedef {{ fence: number, status: string, owner: string | null, until: number, steps?: Record<string, StepRecord> }} JobNow
 */

const STEPS = new Set(["pushed", "renewed", "completed", "released", "failed", "expired", "dead"]);
const ENDS = new Set(["completed", "released", "failed", "expired", "dead"]);

/**
 * The history in order, each claim a generation holding the events of its lease.
 * @param {JobEvent[]} events oldest first
 * @returns {Entry[]}
 */
export function leaseHistory(events) {
  /** @type {Entry[]} */
  const entries = [];
  /** @type {Map<number, Generation>} */
  const byFence = new Map();
  for (const event of events) {
    if (event.kind === "claimed" && event.fence !== null) {
      const generation = { fence: event.fence, owner: event.owner, claim: event, steps: [], refused: [], late: [] };
      byFence.set(event.fence, generation);
      entries.push({ generation });
      continue;
    }
    const lostTo = event.kind === "refused" && event.currentFence !== null ? byFence.get(event.currentFence) : undefined;
    const own = event.fence === null ? undefined : byFence.get(event.fence);
    if (lostTo) {
      lostTo.refused.push(event);
      if (own && own !== lostTo && own.owner === event.owner) own.late.push(event);
    } else if (STEPS.has(event.kind) && own) own.steps.push(event);
    else entries.push({ event });
  }
  return entries;
}

/**
 * The timeline, with a sentence above it that tells the story in short.
 * @param {JobEvent[]} events
 * @param {JobNow} job
 */
export function timeline(events, job) {
  const entries = leaseHistory(events);
  const origin = events[0]?.at ?? 0;
  const generations = entries.flatMap((entry) => ("generation" in entry ? [entry.generation] : []));
  const cancelledAt = events.find((event) => event.kind === "cancelled")?.at ?? null;
  return h("section", { class: "timeline", "aria-labelledby": "timeline-title" },
    h("h2", { id: "timeline-title" }, "History"),
    h("p", { class: "legend" },
      "Each claim opens a new lease with the next fence. Only the current lease may renew, complete, release or fail: ",
      "a write that presents an older fence, or another owner, is refused, and is shown beside the lease it lost to."),
    h("p", { class: "summary" }, summary(generations, job)),
    h("ol", { class: "entries" }, entries.map((entry, i) => ("generation" in entry
      ? generationItem(entry.generation, job, origin, generations[generations.indexOf(entry.generation) + 1], cancelledAt)
      : eventItem(entry.event, origin, i, cancelledAt)))));
}

/**
 * @param {Generation[]} generations
 * @param {JobNow} job
 */
function summary(generations, job) {
  if (generations.length === 0) return "Never claimed yet.";
  const refused = generations.reduce((sum, generation) => sum + generation.refused.reduce((n, event) => n + (event.count ?? 1), 0), 0);
  const last = generations.at(-1);
  const parts = [`${generations.length} lease${generations.length === 1 ? "" : "s"}, fence ${generations[0]?.fence}${generations.length > 1 ? ` to ${last?.fence}` : ""}.`];
  if (job.status === "done") parts.push(`The stored result is from ${job.owner ?? "the lease"} with fence ${job.fence}.`);
  else if (job.status === "leased") parts.push(`${job.owner} holds fence ${job.fence} now.`);
  else if (job.status === "cancelled") parts.push("The job was cancelled.");
  if (refused > 0) parts.push(`${refused} stale write${refused === 1 ? " was" : "s were"} refused.`);
  return parts.join(" ");
}

/**
 * @param {Generation} generation
 * @param {JobNow} job
 * @param {number} origin
 * @param {Generation | undefined} next
 * @param {number | null} cancelledAt when the job was cancelled, if it was
 */
function generationItem(generation, job, origin, next, cancelledAt) {
  const current = generation.fence === job.fence;
  const end = generation.steps.findLast((step) => ENDS.has(step.kind));
  const state = verdict(generation, end, job, next);
  return h("li", { class: `generation ${current ? "current" : "past"} ${state.tone}`, "data-fence": generation.fence },
    h("div", { class: "lease" },
      h("div", { class: "lease-head" },
        h("span", { class: "fence" }, `fence ${generation.fence}`),
        h("span", { class: "owner" }, generation.owner ?? "?"),
        h("span", { class: `verdict ${state.tone}` }, state.text)),
      h("ol", { class: "steps" },
        step(generation.claim, origin, `claimed by ${generation.owner}`),
        inOrder([
          ...generation.steps.map((event) => ({ at: event.at, item: step(event, origin, stepText(event)) })),
          ...recordedSteps(job, generation.fence).map(([name, record]) => ({ at: record.at, item: recordedStep(name, record, origin) })),
        ]),
        generation.late.map((event) => step(event, origin, `✕ its ${event.action} came too late and was refused: fence ${event.currentFence} was current`, "late")))),
    generation.refused.length ? refusals(generation, origin, cancelledAt) : null);
}

/**
 * The items of a lease's steps, by when each happened.
 * @param {{ at: number, item: Node }[]} timed
 */
function inOrder(timed) {
  return timed.sort((a, b) => a.at - b.at).map(({ item }) => item);
}

/**
 * The steps a lease recorded (POST /v1/jobs/{id}/steps/{name}): those the job keeps with this fence.
 * @param {JobNow} job
 * @param {number} fence
 * @returns {[string, StepRecord][]}
 */
function recordedSteps(job, fence) {
  return Object.entries(job.steps ?? {}).filter(([, record]) => record.fence === fence);
}

/** How much of a step's result its line shows. */
const STEP_PREVIEW = 60;

/**
 * @param {string} name
 * @param {StepRecord} record
 * @param {number} origin
 */
function recordedStep(name, record, origin) {
  const result = JSON.stringify(record.result) ?? "null";
  const shown = result.length > STEP_PREVIEW ? `${result.slice(0, STEP_PREVIEW)}…` : result;
  return h("li", { class: "step recorded", "data-step": name }, when(record.at, origin), " ", `step ${name} recorded: ${shown}`);
}

/**
 * @param {Generation} generation
 * @param {JobEvent | undefined} end
 * @param {JobNow} job
 * @param {Generation | undefined} next
 * @returns {{ text: string, tone: string }}
 */
function verdict(generation, end, job, next) {
  const current = generation.fence === job.fence;
  if (end?.kind === "completed") return { text: current && job.status === "done" ? "completed: its result is stored" : "completed", tone: "ok" };
  if (end) return { text: end.kind + (next ? `, then fence ${next.fence}` : ""), tone: end.kind === "released" ? "muted" : "bad" };
  if (current && job.status === "leased") return { text: `holds the lease until ${moment(job.until).slice(11)}`, tone: "live" };
  if (current && job.status === "cancelled") return { text: "cancelled while it held the lease", tone: "bad" };
  return { text: next ? `superseded by fence ${next.fence}` : "ended", tone: "muted" };
}

/** @param {JobEvent} event */
function stepText(event) {
  const times = (event.count ?? 1) > 1 ? ` ×${event.count}` : "";
  if (event.kind === "completed") return "completed";
  if (event.kind === "renewed") return `renewed${times}${event.progress === null || event.progress === undefined ? "" : `, progress ${JSON.stringify(event.progress)}`}`;
  // An expiry's error only says whose lease it was, which the generation shows.
  if (event.kind === "expired") return "lease expired";
  if (event.kind === "pushed") return pushedText(event);
  return `${event.kind}${event.error ? `: ${event.error}` : ""}`;
}

/**
 * A push delivery of the lease, in words: how the endpoint answered, and how long it took.
 * @param {JobEvent} event
 */
function pushedText(event) {
  const took = typeof event.durationMs === "number" ? ` in ${event.durationMs} ms` : "";
  if (event.action === "success") return `pushed: the endpoint answered ${event.httpStatus}${took}`;
  if (event.action === "accepted") return `pushed: the endpoint answered 202${took}; it ends the lease itself`;
  return `pushed${took}: ${event.error ?? event.action}`;
}

/**
 * @param {JobEvent} event
 * @param {number} origin
 * @param {string} text
 * @param {string} [tone]
 */
function step(event, origin, text, tone = "") {
  const last = (event.count ?? 1) > 1 && event.lastAt !== undefined ? h("span", { class: "muted" }, ` (last ${offset(event.lastAt, origin)})`) : null;
  return h("li", { class: `step ${event.kind} ${event.kind === "pushed" ? event.action : ""} ${tone}`.replace(/\s+/g, " ").trim() }, when(event.at, origin), " ", text, last);
}

/**
 * @param {number} at
 * @param {number} origin
 */
function when(at, origin) {
  return h("time", { datetime: new Date(at).toISOString(), title: moment(at) }, offset(at, origin));
}

/**
 * The writes this generation's lease refused, each presented owner and fence against the current ones.
 * @param {Generation} generation
 * @param {number} origin
 * @param {number | null} cancelledAt
 */
function refusals(generation, origin, cancelledAt) {
  return h("aside", { class: "refusals", "aria-label": `Stale writes refused while fence ${generation.fence} was current` },
    h("h3", {}, `Refused while fence ${generation.fence} was current`),
    generation.refused.map((event) => refusal(event, origin, cancelledAt)));
}

/**
 * @param {JobEvent} event
 * @param {number} origin
 * @param {number | null} [cancelledAt]
 */
export function refusal(event, origin, cancelledAt = null) {
  const times = (event.count ?? 1) > 1 ? ` ×${event.count}` : "";
  return h("div", { class: "refusal", "data-seq": event.seq },
    h("p", { class: "what" }, "✕ ", h("strong", {}, event.action ?? "write"), ` by ${event.owner}${times} `, when(event.at, origin),
      event.lastAt !== undefined && times ? h("span", { class: "muted" }, ` (last ${offset(event.lastAt, origin)})`) : null),
    h("div", { class: "versus" },
      h("div", { class: "presented" }, h("span", { class: "label" }, "presented"), h("span", { class: "who" }, event.owner ?? "?"), h("span", { class: "fence" }, `fence ${event.fence}`)),
      h("span", { class: "vs", "aria-hidden": "true" }, "≠"),
      h("div", { class: "holder" }, h("span", { class: "label" }, "current"), h("span", { class: "who" }, event.currentOwner ?? "nobody"), h("span", { class: "fence" }, `fence ${event.currentFence}`))),
    h("p", { class: "why" }, why(event, cancelledAt)));
}

/**
 * Why the write was refused, read from what it presented and what was current.
 * @param {JobEvent} event
 * @param {number | null} cancelledAt
 */
function why(event, cancelledAt) {
  const presented = event.fence ?? 0;
  const current = event.currentFence ?? 0;
  if (presented < current) return `Fence ${presented} is older than fence ${current}: a newer lease had replaced it.`;
  if (presented > current) return `Fence ${presented} was never handed out: the newest is ${current}.`;
  if (cancelledAt !== null && event.at >= cancelledAt) return "The job had been cancelled: no lease may write to it any more.";
  if (event.currentOwner === null) return "The lease had ended: given back, or expired and cleared.";
  if (event.currentOwner !== event.owner) return `Fence ${current} is ${event.currentOwner}'s, not ${event.owner}'s.`;
  return "The lease had ended: it expired, or the job was already done.";
}

/**
 * A job-level event: enqueued, retried, cancelled, deleted, or a refusal no lease in the history explains.
 * @param {JobEvent} event
 * @param {number} origin
 * @param {number} index
 * @param {number | null} cancelledAt
 */
function eventItem(event, origin, index, cancelledAt) {
  if (event.kind === "refused") return h("li", { class: "event refused" }, refusal(event, origin, cancelledAt));
  const text = {
    enqueued: index === 0 ? `enqueued, ${moment(event.at)}` : "enqueued again",
    retried: `retried: queued again with its attempts reset; the next claim gets fence ${(event.fence ?? 0) + 1}`,
    deleted: "deleted",
    cancelled: `cancelled by ${event.owner ?? "?"}${event.error ? `: ${event.error}` : ""}`,
  }[event.kind] ?? stepText(event);
  return h("li", { class: `event ${event.kind}` }, when(event.at, origin), " ", text);
}
