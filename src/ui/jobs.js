// @ts-check
// The jobs a search finds (search-form.js), one keyset page at a time as
// GET /v1/jobs gives them (in id order; the cursor is the last id seen, so pages
// stay stable while jobs change), the bulk actions on them (bulk.js), and a job
// found by its id.
import { api } from "./api.js";
import { bulkBar } from "./bulk.js";
import { errorNote, h } from "./dom.js";
import { moment } from "./format.js";
import { may, mayAtAll } from "./permit.js";
import { filterOf, queryOf, searchForm } from "./search-form.js";

/** @typedef {import("./search-form.js").Filter} Filter */

const PAGE_SIZE = 50;
/** The most jobs a page of GET /v1/jobs looks at (docs/search.md#pages). */
const PAGE_SCAN = 20_000;

/**
 * @typedef {{ id: string, queue: string, status: string, owner: string | null, fence: number,
 *   attempts: number, maxAttempts: number, updatedAt: number }} JobRow
 */

/** The hash of a job's page. @param {string} id */
export const jobHref = (id) => `#/job/${encodeURIComponent(id)}`;

/** @type {import("./app.js").View} */
export async function jobsView(container, params, signal) {
  const filter = filterOf(params);
  const cursor = params.get("cursor") ?? "";
  container.append(h("div", { class: "heading" }, h("h1", {}, "Jobs"), findById()));
  const { queues } = await api("/v1/stats");
  if (signal.aborted) return;
  // The bulk buttons are offered where the server would take them: a queue the token manages, or any of its queues.
  const manage = filter.queue ? may("manage", filter.queue) : mayAtAll("manage");
  const report = h("div", { class: "bulk-report", role: "status" });
  const results = h("div", { class: "results" });
  const load = async () => {
    // A refused search (a range that ends before it starts, say) keeps the form, to be put right.
    try {
      const page = await api(`/v1/jobs?${pageQuery(filter, cursor)}`);
      if (!signal.aborted) results.replaceChildren(...pageOf(page, filter, cursor, manage ? report : null, load));
    } catch (error) {
      if (!signal.aborted) results.replaceChildren(errorNote(error));
    }
  };
  container.append(searchForm(queues.map((/** @type {{ queue: string }} */ stats) => stats.queue), filter), report, results);
  await load();
}

/** @param {Filter} filter @param {string} cursor */
function pageQuery(filter, cursor) {
  const query = queryOf(filter);
  query.set("limit", String(PAGE_SIZE));
  if (cursor) query.set("cursor", cursor);
  return query;
}

/**
 * A page of jobs: the bulk bar (with `report`, where the token may manage), the table, and the pager.
 * A page short of its limit with a cursor stopped at its bound: more may follow.
 * @param {{ jobs: JobRow[], nextCursor: string | null }} page
 * @param {Filter} filter
 * @param {string} cursor
 * @param {HTMLElement | null} report
 * @param {() => Promise<void>} reload
 */
function pageOf({ jobs, nextCursor }, filter, cursor, report, reload) {
  const bulk = report && bulkBar(jobs, filter, report, reload);
  const bounded = nextCursor !== null && jobs.length < PAGE_SIZE;
  const none = nextCursor ? "No job matches among those this page looked at." : cursor ? "No more jobs." : "No jobs match.";
  return [
    bulk ? bulk.bar : "",
    jobs.length ? table(jobs, bulk ? bulk.pick : () => null) : h("p", { class: "muted" }, none),
    bounded ? h("p", { class: "muted", id: "more-may-follow" }, `This page stopped at the ${PAGE_SCAN.toLocaleString("en")} jobs a page looks at: more may follow on the next page.`) : "",
    pager(filter, cursor, nextCursor),
  ];
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
 * @param {JobRow[]} jobs
 * @param {(id: string) => HTMLInputElement | null} pick a row's checkbox, if rows may be selected
 */
function table(jobs, pick) {
  return h("table", { class: "jobs" },
    h("thead", {}, h("tr", {}, ["Id", "Queue", "Status", "Owner", "Fence", "Attempts", "Updated"].map((name) => h("th", { scope: "col" }, name)))),
    h("tbody", {}, jobs.map((job) => h("tr", { "data-id": job.id },
      h("th", { scope: "row" }, pick(job.id), h("a", { href: jobHref(job.id) }, job.id)),
      h("td", { "data-label": "queue" }, job.queue),
      h("td", { "data-label": "status" }, h("span", { class: `status status-${job.status}` }, job.status)),
      h("td", { "data-label": "owner" }, job.owner ?? "–"),
      h("td", { "data-label": "fence", class: "num" }, job.fence),
      h("td", { "data-label": "attempts", class: "num" }, `${job.attempts} / ${job.maxAttempts}`),
      h("td", { "data-label": "updated" }, moment(job.updatedAt))))));
}

/**
 * Keyset pages go forward only; the browser's Back goes to the page before.
 * @param {Filter} filter
 * @param {string} cursor
 * @param {string | null} next
 */
function pager(filter, cursor, next) {
  const href = (/** @type {string | null} */ at) => {
    const query = queryOf(filter);
    if (at) query.set("cursor", at);
    return `#/jobs?${query}`;
  };
  return h("nav", { class: "pager", "aria-label": "Pages" },
    cursor ? h("a", { href: href(null) }, "« First page") : null,
    next ? h("a", { href: href(next), rel: "next" }, "Next page »") : null);
}
