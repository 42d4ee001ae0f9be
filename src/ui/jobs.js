// @ts-check
// Jobs of a queue and status, one keyset page at a time as GET /v1/jobs gives
// them (in id order; the cursor is the last id seen, so pages stay stable while
// jobs change), and a job found by its id.
import { api } from "./api.js";
import { h } from "./dom.js";
import { moment } from "./format.js";

const STATUSES = ["queued", "scheduled", "leased", "done", "dead", "cancelled"];
const PAGE_SIZE = 50;

/**
 * @typedef {{ id: string, queue: string, status: string, owner: string | null, fence: number,
 *   attempts: number, maxAttempts: number, updatedAt: number }} JobRow
 */

/** The hash of a job's page. @param {string} id */
export const jobHref = (id) => `#/job/${encodeURIComponent(id)}`;

/** @type {import("./app.js").View} */
export async function jobsView(container, params, signal) {
  const queue = params.get("queue") ?? "";
  const status = params.get("status") ?? "";
  const cursor = params.get("cursor") ?? "";
  container.append(h("div", { class: "heading" }, h("h1", {}, "Jobs"), findById()));

  const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
  if (queue) query.set("queue", queue);
  if (status) query.set("status", status);
  if (cursor) query.set("cursor", cursor);
  const [{ queues }, page] = await Promise.all([api("/v1/stats"), api(`/v1/jobs?${query}`)]);
  if (signal.aborted) return;
  container.append(
    filters(queues.map((/** @type {{ queue: string }} */ stats) => stats.queue), queue, status),
    page.jobs.length ? table(page.jobs) : h("p", { class: "muted" }, cursor ? "No more jobs." : "No jobs match."),
    pager(queue, status, cursor, page.nextCursor));
}

/** A form that opens the job with the id typed (the API finds jobs by exact id). */
function findById() {
  const input = h("input", { type: "search", name: "id", id: "find-id", placeholder: "invoice-42", required: true, spellcheck: "false" });
  return h("form", { class: "find", role: "search", onsubmit: (/** @type {SubmitEvent} */ event) => {
    event.preventDefault();
    location.hash = jobHref(input.value.trim());
  } }, h("label", { for: "find-id" }, "Job id"), input, h("button", { type: "submit" }, "Open"));
}

/**
 * @param {string[]} queues
 * @param {string} queue
 * @param {string} status
 */
function filters(queues, queue, status) {
  const queueSelect = h("select", { id: "filter-queue", name: "queue" },
    h("option", { value: "" }, "every queue"),
    // A queue from the URL that has no jobs (yet) is kept as a choice.
    [...new Set([...queues, ...(queue ? [queue] : [])])].map((name) => h("option", { value: name, selected: name === queue }, name)));
  const statusSelect = h("select", { id: "filter-status", name: "status" },
    h("option", { value: "" }, "any status"),
    STATUSES.map((name) => h("option", { value: name, selected: name === status }, name)));
  const go = () => {
    const next = new URLSearchParams();
    if (queueSelect.value) next.set("queue", queueSelect.value);
    if (statusSelect.value) next.set("status", statusSelect.value);
    location.hash = `#/jobs?${next}`;
  };
  queueSelect.addEventListener("change", go);
  statusSelect.addEventListener("change", go);
  return h("div", { class: "filters" },
    h("span", {}, h("label", { for: "filter-queue" }, "Queue "), queueSelect),
    h("span", {}, h("label", { for: "filter-status" }, "Status "), statusSelect));
}

/** @param {JobRow[]} jobs */
function table(jobs) {
  return h("table", { class: "jobs" },
    h("thead", {}, h("tr", {}, ["Id", "Queue", "Status", "Owner", "Fence", "Attempts", "Updated"].map((name) => h("th", { scope: "col" }, name)))),
    h("tbody", {}, jobs.map((job) => h("tr", { "data-id": job.id },
      h("th", { scope: "row" }, h("a", { href: jobHref(job.id) }, job.id)),
      h("td", { "data-label": "queue" }, job.queue),
      h("td", { "data-label": "status" }, h("span", { class: `status status-${job.status}` }, job.status)),
      h("td", { "data-label": "owner" }, job.owner ?? "–"),
      h("td", { "data-label": "fence", class: "num" }, job.fence),
      h("td", { "data-label": "attempts", class: "num" }, `${job.attempts} / ${job.maxAttempts}`),
      h("td", { "data-label": "updated" }, moment(job.updatedAt))))));
}

/**
 * Keyset pages go forward only; the browser's Back goes to the page before.
 * @param {string} queue
 * @param {string} status
 * @param {string} cursor
 * @param {string | null} next
 */
function pager(queue, status, cursor, next) {
  const href = (/** @type {string | null} */ at) => {
    const query = new URLSearchParams();
    if (queue) query.set("queue", queue);
    if (status) query.set("status", status);
    if (at) query.set("cursor", at);
    return `#/jobs?${query}`;
  };
  return h("nav", { class: "pager", "aria-label": "Pages" },
    cursor ? h("a", { href: href(null) }, "« First page") : null,
    next ? h("a", { href: href(next), rel: "next" }, "Next page »") : null);
}
