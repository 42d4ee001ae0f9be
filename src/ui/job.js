// @ts-check
// One job: what it is now, its history as lease generations, and the two
// actions an operator takes, each confirmed and sent through the public API.
import { api, ApiError, jobPath } from "./api.js";
import { confirmAction, errorNote, h } from "./dom.js";
import { moment, prettyJson } from "./format.js";
import { may } from "./permit.js";
import { jobHref } from "./jobs.js";
import { timeline } from "./timeline.js";

/** Events read per request, and the most the page reads (then it says so). */
const EVENTS_PAGE = 1_000;
const EVENTS_MAX = 10_000;

/**
 * @typedef {import("./timeline.js").JobEvent} JobEvent
 * @typedef {{ id: string, queue: string, payload: unknown, priority: number, runAt: number, owner: string | null,
 *   until: number, fence: number, result: unknown, done: boolean, status: string, attempts: number,
 *   maxAttempts: number, lastError: string | null, progress: unknown, createdAt: number, updatedAt: number,
 *   dedupKey: string | null, dedupUntil: number | null, supersededBy: string | null,
 *   steps: Record<string, import("./timeline.js").StepRecord> }} Job
 */

/** @type {import("./app.js").View} */
export async function jobView(container, params, signal) {
  const id = params.get("id") ?? "";
  let job;
  let history;
  try {
    [job, history] = await Promise.all([api(jobPath(id)), allEvents(id)]);
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 404)) throw error;
    container.append(h("h1", {}, "No such job"), errorNote(error), h("p", {}, h("a", { href: "#/jobs" }, "All jobs")));
    return;
  }
  if (signal.aborted) return;
  const reload = () => {
    container.replaceChildren();
    return jobView(container, params, signal);
  };
  container.append(
    h("div", { class: "heading" },
      h("h1", {}, h("span", { class: "muted" }, "Job "), job.id, " ", h("span", { class: `status status-${job.status}` }, job.status)),
      may("manage", job.queue) && actions(job, reload)),
    fields(job, history.events),
    timeline(history.events, job),
    h("div", { class: "values" },
      h("section", {}, h("h2", {}, "Payload"), h("pre", { class: "json" }, prettyJson(job.payload))),
      h("section", {}, h("h2", {}, "Result"), h("pre", { class: "json" }, resultText(job))),
      h("section", {}, h("h2", {}, "Progress"), h("pre", { class: "json", id: "progress" }, job.progress === null ? "none reported" : prettyJson(job.progress)))));
  if (history.more) container.append(h("p", { class: "muted" }, `Only the first ${EVENTS_MAX} events are shown.`));
}

/**
 * The Result panel: a done job's result whatever it is (null too); "none yet" only while one may come.
 * @param {Job} job
 */
function resultText(job) {
  if (job.status === "done" || job.result !== null) return prettyJson(job.result);
  return job.status === "dead" || job.status === "cancelled" ? `none: the job is ${job.status}` : "none yet";
}

/**
 * Every event of the job, page after page, up to EVENTS_MAX.
 * @param {string} id
 * @returns {Promise<{ events: JobEvent[], more: boolean }>}
 */
async function allEvents(id) {
  /** @type {JobEvent[]} */
  const events = [];
  let cursor = null;
  do {
    const query = new URLSearchParams({ limit: String(EVENTS_PAGE) });
    if (cursor) query.set("cursor", cursor);
    const page = await api(`${jobPath(id)}/events?${query}`);
    events.push(...page.events);
    cursor = page.nextCursor;
  } while (cursor && events.length < EVENTS_MAX);
  return { events, more: cursor !== null };
}

/** How much of a result the header shows; the Result panel shows all of it. */
const RESULT_PREVIEW = 80;

/**
 * The job's fields as they are true in its status. A finished job (done, dead,
 * cancelled) keeps the owner, fence and until of its last lease in the row, but
 * holds no lease: it says when and how it ended, and by whom. Its last error is
 * shown as the cause only where it is one (dead); elsewhere it is labelled as
 * an earlier attempt's, since the attempt since has not failed (yet).
 * @param {Job} job
 * @param {JobEvent[]} events
 */
function fields(job, events) {
  // A finished job's row is not written again, so its updatedAt is when it finished.
  const ended = job.updatedAt;
  /** @type {[string, Node | string | number][]} */
  let rows;
  if (job.status === "done") {
    rows = [["completed", at(ended)], ["completed by", lease(job.owner, job.fence)], ["result", preview(job.result)]];
  } else if (job.status === "dead") {
    const claim = events.findLast((event) => event.kind === "claimed" && event.fence === job.fence);
    rows = [["died", at(ended)], ["last lease", lease(claim?.owner ?? null, job.fence)], ["final error", job.lastError ?? "none given"]];
  } else if (job.status === "cancelled") {
    const cancel = events.findLast((event) => event.kind === "cancelled");
    const held = job.owner !== null && job.until > ended;
    rows = [["cancelled", at(ended)], ["cancelled by", cancel?.owner ?? "unknown"]];
    if (cancel?.error) rows.push(["reason", cancel.error]);
    rows.push(["lease then", held ? `${lease(job.owner, job.fence)}: its writes are refused` : "none"]);
  } else if (job.status === "leased") {
    rows = [["owner", job.owner ?? "?"], ["fence", job.fence], ["lease until", at(job.until)], ["due", at(job.runAt)], ["updated", at(job.updatedAt)]];
  } else {
    rows = [["due", at(job.runAt)], ["last fence", job.fence === 0 ? "none yet" : job.fence]];
    // A lease that ran out and that nothing has ended yet: still in the row, held by nobody.
    if (job.owner !== null) rows.push(["lease", h("span", {}, `${lease(job.owner, job.fence)}, ran out `, at(job.until))]);
    rows.push(["updated", at(job.updatedAt)]);
  }
  rows = [
    ["queue", h("a", { href: `#/jobs?${new URLSearchParams({ queue: job.queue })}` }, job.queue)],
    ...rows,
    ["attempts", `${job.attempts} of ${job.maxAttempts}`],
    ["priority", job.priority],
    ["created", at(job.createdAt)],
  ];
  if (job.lastError !== null && job.status !== "dead") rows.push(["error of an earlier attempt", job.lastError]);
  rows.push(...onceRows(job));
  return h("dl", { class: "fields" }, rows.map(([name, value]) =>
    h("div", {}, h("dt", {}, name), h("dd", { "data-field": name }, value instanceof Node ? value : String(value)))));
}

/**
 * What the job's dedup key says of it (docs/queues.md#once-per-key): the key,
 * with the end of its window, and the job that superseded this one.
 * @param {Job} job
 * @returns {[string, Node | string | number][]}
 */
function onceRows(job) {
  /** @type {[string, Node | string | number][]} */
  const rows = [];
  if (job.dedupKey !== null) {
    rows.push(["dedup key", job.dedupUntil === null ? job.dedupKey : h("span", {}, `${job.dedupKey}, its window until `, at(job.dedupUntil))]);
  }
  if (job.supersededBy !== null) rows.push(["superseded by", h("a", { href: jobHref(job.supersededBy) }, job.supersededBy)]);
  return rows;
}

/** @param {string | null} owner @param {number} fence */
const lease = (owner, fence) => `${owner ?? "?"}, fence ${fence}`;

/** A moment in the reader's time zone, its exact instant in `datetime`. @param {number} ms */
const at = (ms) => h("time", { datetime: new Date(ms).toISOString() }, moment(ms));

/** The start of a result, on one line. @param {unknown} result */
function preview(result) {
  const text = JSON.stringify(result) ?? "undefined";
  return h("code", {}, text.length <= RESULT_PREVIEW ? text : `${text.slice(0, RESULT_PREVIEW)}… (all of it below)`);
}

/**
 * Retry (a dead job), cancel (a job that may still run) and delete (a job nobody holds), each confirmed first.
 * A refusal shows the API's own message; a success shows the job again.
 * @param {Job} job
 * @param {() => void} reload
 */
function actions(job, reload) {
  const note = h("div", { class: "action-note" });
  const act = async (/** @type {string} */ method, /** @type {string} */ path, /** @type {() => void} */ then, /** @type {unknown} */ body = undefined) => {
    try {
      await api(path, { method, body });
      then();
    } catch (error) {
      note.replaceChildren(errorNote(error));
    }
  };
  const retry = job.status === "dead" && h("button", { type: "button", onclick: async () => {
    const ok = await confirmAction("Retry this job?", `${job.id} goes back to queue ${job.queue} with its attempts reset. Its fence stays ${job.fence}, so no old lease can write to it.`, "Retry job");
    if (ok) await act("POST", `${jobPath(job.id)}/retry`, () => void reload());
  } }, "Retry");
  const remove = job.status !== "leased" && h("button", { type: "button", class: "danger", onclick: async () => {
    const ok = await confirmAction("Delete this job?", `${job.id} is removed from queue ${job.queue}. A new job with this id would start above fence ${job.fence}, so no old lease can write to it either.`, "Delete job");
    if (ok) await act("DELETE", jobPath(job.id), () => deleted.replaceChildren(h("p", { class: "ok", role: "status" }, `Deleted ${job.id}. `, h("a", { href: "#/jobs" }, "All jobs"))));
  } }, "Delete");
  const cancel = ["queued", "scheduled", "leased"].includes(job.status) && h("button", { type: "button", class: "danger", onclick: async () => {
    const held = job.status === "leased" ? ` ${job.owner} holds it with fence ${job.fence}: its next renew, complete, fail or release is refused, and its handler is told.` : "";
    const ok = await confirmAction("Cancel this job?", `${job.id} will not run again; it stays in queue ${job.queue} as cancelled.${held}`, "Cancel job", "Keep the job");
    if (ok) await act("POST", `${jobPath(job.id)}/cancel`, () => void reload(), { by: "dashboard" });
  } }, "Cancel job");
  const deleted = h("div", { class: "actions" }, retry, cancel, remove, note);
  return deleted;
}
