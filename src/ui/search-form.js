// @ts-check
// The Jobs view's search bar: the filters of GET /v1/jobs (docs/search.md), kept
// in the URL's hash under the API's own names (`#/jobs?status=dead&status=cancelled&idPrefix=mail-`),
// so that a search can be shared, reloaded, and sent to the API as it is. Times
// are milliseconds since the epoch in the URL, so a shared link means the same
// instants everywhere; the inputs show them in the reader's time zone.
import { h } from "./dom.js";
import { moment } from "./format.js";

/** Every status, in the order of a job's life. */
export const STATUSES = ["queued", "scheduled", "leased", "done", "dead", "cancelled"];

/** The filters typed as text, in the order the form shows them. */
const TEXTS = [
  { name: "key", label: "Key", placeholder: "customer-7" },
  { name: "idPrefix", label: "Id starts with", placeholder: "invoice-" },
  { name: "error", label: "Error contains", placeholder: "timeout" },
];

/** The time ranges: an end ("To") takes in the whole minute it names, as a datetime-local input shows minutes only. */
const TIMES = [
  { name: "createdFrom", label: "Created from", end: false },
  { name: "createdTo", label: "Created to", end: true },
  { name: "finishedFrom", label: "Finished from", end: false },
  { name: "finishedTo", label: "Finished to", end: true },
];

/**
 * What a search asks, under the API's names: those not given are left out.
 * @typedef {{ queue?: string, status?: string[], key?: string, idPrefix?: string, error?: string,
 *   createdFrom?: number, createdTo?: number, finishedFrom?: number, finishedTo?: number }} Filter
 */

/**
 * The search in the URL's query (a time that is not a whole number is left out).
 * @param {URLSearchParams} params
 * @returns {Filter}
 */
export function filterOf(params) {
  /** @type {Record<string, unknown>} */
  const filter = {};
  for (const name of ["queue", ...TEXTS.map((text) => text.name)]) {
    const value = params.get(name);
    if (value) filter[name] = value;
  }
  const statuses = params.getAll("status").filter((status) => STATUSES.includes(status));
  if (statuses.length) filter.status = statuses;
  for (const { name } of TIMES) {
    const value = params.get(name);
    if (value && /^\d+$/.test(value)) filter[name] = Number(value);
  }
  return filter;
}

/**
 * The search as a query, for the URL's hash and GET /v1/jobs alike (a status repeated).
 * @param {Filter} filter
 */
export function queryOf(filter) {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(filter)) {
    for (const one of Array.isArray(value) ? value : [value]) query.append(name, String(one));
  }
  return query;
}

/**
 * The form: a change of queue or status searches at once, text and times on Search (or Enter).
 * @param {string[]} queues the queues to choose from
 * @param {Filter} filter the search shown now
 */
export function searchForm(queues, filter) {
  const queueSelect = h("select", { id: "filter-queue", name: "queue" },
    h("option", { value: "" }, "every queue"),
    // A queue from the URL that has no jobs (yet) is kept as a choice.
    [...new Set([...queues, ...(filter.queue ? [filter.queue] : [])])].map((name) => h("option", { value: name, selected: name === filter.queue }, name)));
  const statuses = h("fieldset", { class: "statuses" }, h("legend", {}, "Status"),
    STATUSES.map((status) => h("label", { class: "check" },
      h("input", { type: "checkbox", name: "status", value: status, id: `filter-status-${status}`, checked: filter.status?.includes(status) }), status)));
  const texts = TEXTS.map(({ name, label, placeholder }) =>
    labelled(name, label, h("input", { type: "search", id: `filter-${name}`, name, placeholder, spellcheck: "false", value: /** @type {string | undefined} */ (filter[/** @type {keyof Filter} */ (name)]) })));
  const times = TIMES.map(({ name, label }) => {
    const at = /** @type {number | undefined} */ (filter[/** @type {keyof Filter} */ (name)]);
    return labelled(name, label, h("input", { type: "datetime-local", id: `filter-${name}`, name, value: at === undefined ? undefined : moment(at).slice(0, 16).replace(" ", "T") }));
  });
  const form = h("form", { class: "search", role: "search", "aria-label": "Search jobs", onsubmit: (/** @type {SubmitEvent} */ event) => {
    event.preventDefault();
    location.hash = `#/jobs?${queryOf(filterOf(fromForm(new FormData(form))))}`;
  } },
  labelled("queue", "Queue", queueSelect), statuses, ...texts, ...times,
  h("div", { class: "search-buttons" }, h("button", { type: "submit" }, "Search"), h("a", { href: "#/jobs" }, "Clear")));
  const now = () => form.requestSubmit();
  queueSelect.addEventListener("change", now);
  statuses.addEventListener("change", now);
  return form;
}

/**
 * @param {string} name
 * @param {string} label
 * @param {HTMLElement} input
 */
function labelled(name, label, input) {
  return h("span", { class: "search-field" }, h("label", { for: `filter-${name}` }, label), input);
}

/**
 * The form's values as URL parameters: a local time as its instant in ms, an end at its minute's last ms.
 * @param {FormData} data
 */
function fromForm(data) {
  const params = new URLSearchParams();
  for (const [name, value] of data) {
    const text = String(value).trim();
    if (!text) continue;
    const time = TIMES.find((one) => one.name === name);
    // new Date of a datetime-local value ("2026-11-30T09:05") reads it in the reader's time zone.
    params.append(name, time ? String(new Date(text).getTime() + (time.end ? 59_999 : 0)) : text);
  }
  return params;
}
