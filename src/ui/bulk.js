// @ts-check
// Acting on many jobs from the Jobs view: the rows ticked on this page, or every
// job that matches the search. The two go different ways, because
// POST /v1/jobs/bulk takes a filter, and no filter names a hand-picked set of ids
// (an id prefix takes in every id that starts with it):
// - the rows ticked: one call of the single verb per job (POST /v1/jobs/:id/retry,
//   /cancel, DELETE /v1/jobs/:id), each job the one the person saw;
// - all matching: POST /v1/jobs/bulk on the search, narrowed to the statuses the
//   action takes, counted first with dryRun, then acted on 1,000 at a time with its
//   nextCursor until the range is done or the person stops.
// Either way the dialog says how many jobs and in which statuses before anything
// is sent, a line counts the calls and the changes while it runs, and the outcome
// (matched, changed, skipped by reason) stays on the page when the list reloads.
import { api, ApiError, jobPath } from "./api.js";
import { confirmAction, errorNote, h } from "./dom.js";
import { STATUSES } from "./search-form.js";

/** @typedef {import("./search-form.js").Filter} Filter */
/** @typedef {{ id: string, status: string }} Picked */
/** @typedef {"retry" | "cancel" | "delete"} Action */
/** @typedef {{ matched: number, changed: number, skipped: Record<string, number>, calls: number, stopped: boolean }} Tally */

/** Jobs a bulk call acts on at most; the page goes on with its nextCursor. */
const BULK_STEP = 1_000;
/** Jobs a dry run counts at most per call (the API's most). */
const COUNT_STEP = 10_000;

/**
 * What each action takes, by filter (the bulk's rules) and one by one: a single
 * retry takes dead jobs only, so a ticked cancelled job is skipped (all matching retries it).
 * @type {Record<Action, { byFilter: string[], oneByOne: string[], skipped: string, words: { verb: string, doing: string, done: string, effect: string, keep: string } }>}
 */
const ACTIONS = {
  retry: {
    byFilter: ["dead", "cancelled"],
    oneByOne: ["dead"],
    skipped: "not_dead",
    words: { verb: "Retry", doing: "Retrying", done: "Retried", effect: "each goes back to its queue at once with its attempts reset; its fence stays, so no old lease can write to it", keep: "Cancel" },
  },
  cancel: {
    byFilter: ["queued", "scheduled", "leased"],
    oneByOne: ["queued", "scheduled", "leased"],
    skipped: "already_finished",
    words: { verb: "Cancel", doing: "Cancelling", done: "Cancelled", effect: "none will run again; a holder's next renew, complete, fail or release is refused", keep: "Keep the jobs" },
  },
  delete: {
    byFilter: ["done", "dead", "cancelled"],
    oneByOne: ["done", "dead", "cancelled"],
    skipped: "not_finished",
    words: { verb: "Delete", doing: "Deleting", done: "Deleted", effect: "each is removed; a new job with its id would start above its fence", keep: "Cancel" },
  },
};

/**
 * The bar of a page the token may manage: select all on this page, all matching,
 * and the three buttons; `pick` makes each row's checkbox.
 * @param {Picked[]} jobs the rows of this page
 * @param {Filter} filter the search
 * @param {HTMLElement} report where progress and outcomes are written: it outlives a reload
 * @param {() => Promise<void>} reload reads the page again
 */
export function bulkBar(jobs, filter, report, reload) {
  /** @type {Map<string, HTMLInputElement>} */
  const boxes = new Map(jobs.map((job) => [job.id, h("input", { type: "checkbox", class: "pick", "aria-label": `Select ${job.id}`, onchange: update })]));
  const onPage = h("input", { type: "checkbox", id: "select-page", disabled: jobs.length === 0, onchange: () => {
    for (const box of boxes.values()) box.checked = onPage.checked;
    update();
  } });
  const matching = h("input", { type: "checkbox", id: "select-matching", onchange: update });
  const count = h("span", { class: "selected-count", "aria-live": "polite" });
  const buttons = /** @type {Action[]} */ (["retry", "cancel", "delete"]).map((action) =>
    h("button", { type: "button", class: action === "retry" ? undefined : "danger", "data-action": action, onclick: () => void act(action) },
      action === "cancel" ? "Cancel jobs" : ACTIONS[action].words.verb));

  function update() {
    for (const box of boxes.values()) {
      box.disabled = matching.checked;
      if (matching.checked) box.checked = true;
    }
    const ticked = [...boxes.values()].filter((box) => box.checked).length;
    onPage.checked = jobs.length > 0 && ticked === jobs.length;
    count.textContent = matching.checked ? "every job that matches this search" : `${ticked} selected`;
    for (const button of buttons) button.disabled = !matching.checked && ticked === 0;
  }

  /** @param {Action} action */
  async function act(action) {
    for (const button of buttons) button.disabled = true;
    try {
      const picked = jobs.filter((job) => boxes.get(job.id)?.checked);
      const tally = matching.checked ? await byFilter(action, filter, report) : await oneByOne(action, picked, report);
      if (tally === null) return;
      report.replaceChildren(outcome(action, tally, !matching.checked));
      await reload();
    } catch (error) {
      report.replaceChildren(errorNote(error));
    } finally {
      update();
    }
  }

  update();
  return {
    bar: h("div", { class: "bulk", role: "group", "aria-label": "Act on many jobs" },
      h("label", { class: "check" }, onPage, "All on this page"),
      h("label", { class: "check" }, matching, "All matching this search"),
      count, h("span", { class: "bulk-buttons" }, buttons)),
    /** The checkbox of a row. @param {string} id */
    pick: (id) => boxes.get(id) ?? null,
  };
}

/**
 * Every job that matches `filter` and is in a status the action takes: counted with dryRun, asked, then acted on.
 * @param {Action} action
 * @param {Filter} filter
 * @param {HTMLElement} report
 * @returns {Promise<Tally | null>} null when nothing was sent
 */
async function byFilter(action, filter, report) {
  const { byFilter: takes, words } = ACTIONS[action];
  const statuses = (filter.status ?? STATUSES).filter((status) => takes.includes(status));
  const verb = words.verb.toLowerCase();
  if (!statuses.length) return said(report, `Nothing to ${verb}: ${verb} takes ${or(takes)} jobs, and this search finds ${or(filter.status ?? [])} ones.`);
  const asked = { ...filter, status: statuses };
  const counted = await pages(report, "Counting the jobs that match", { action, filter: asked, limit: COUNT_STEP, dryRun: true });
  if (counted.stopped) return said(report, "Stopped counting; nothing was changed.");
  const n = counted.matched;
  if (n === 0) return said(report, `No job that matches this search is ${or(statuses)}: nothing to ${verb}.`);
  const ok = await confirmAction(`${words.verb} ${jobs(n)}?`,
    `${jobs(n)} that match this search ${n === 1 ? "is" : "are"} ${or(statuses)}, as the server counts them now: ${words.effect}. A job that changes status meanwhile is skipped, never forced.`,
    `${words.verb} ${jobs(n)}`, words.keep);
  if (!ok) return said(report, null);
  const body = { action, filter: asked, limit: BULK_STEP, ...(action === "cancel" ? { by: "dashboard" } : {}) };
  return pages(report, words.doing, body);
}

/**
 * Calls POST /v1/jobs/bulk with `body`, going on with nextCursor until it is null or Stop is pressed.
 * @param {HTMLElement} report
 * @param {string} doing what the progress line says it is doing
 * @param {Record<string, unknown>} body
 * @returns {Promise<Tally>}
 */
async function pages(report, doing, body) {
  /** @type {Tally} */
  const tally = { matched: 0, changed: 0, skipped: {}, calls: 0, stopped: false };
  const stop = stopButton(tally);
  let cursor = null;
  do {
    report.replaceChildren(progress(`${doing}: ${calls(tally.calls)}, ${body.dryRun ? `${num(tally.matched)} so far` : `${num(tally.changed)} changed so far`}`, stop));
    const answer = await api("/v1/jobs/bulk", { method: "POST", body: cursor === null ? body : { ...body, cursor } });
    tally.calls += 1;
    tally.matched += answer.matched;
    tally.changed += answer.changed;
    for (const [reason, times] of Object.entries(/** @type {Record<string, number>} */ (answer.skipped))) tally.skipped[reason] = (tally.skipped[reason] ?? 0) + times;
    cursor = answer.nextCursor;
  } while (cursor !== null && going(tally, report));
  return tally;
}

/**
 * The ticked rows, one single-job call each; rows in a status the action does not take are skipped unsent.
 * @param {Action} action
 * @param {Picked[]} picked
 * @param {HTMLElement} report
 * @returns {Promise<Tally | null>} null when nothing was sent
 */
async function oneByOne(action, picked, report) {
  const { oneByOne: takes, skipped, words } = ACTIONS[action];
  const sent = picked.filter((job) => takes.includes(job.status));
  const left = picked.filter((job) => !takes.includes(job.status));
  const verb = words.verb.toLowerCase();
  if (!sent.length) return said(report, `Nothing to ${verb} among the ${jobs(picked.length)} selected (${byStatus(picked)}): one by one, ${verb} takes ${or(takes)} jobs.`);
  const leftSay = left.length ? ` The other ${num(left.length)} (${byStatus(left)}) ${left.length === 1 ? "is" : "are"} skipped: one by one, ${verb} takes ${or(takes)} jobs.` : "";
  const ok = await confirmAction(`${words.verb} ${jobs(sent.length)}?`,
    `${num(sent.length)} of the ${jobs(picked.length)} selected: ${byStatus(sent)}. ${capital(words.effect)}.${leftSay}`,
    `${words.verb} ${jobs(sent.length)}`, words.keep);
  if (!ok) return said(report, null);
  /** @type {Tally} */
  const tally = { matched: picked.length, changed: 0, skipped: left.length ? { [skipped]: left.length } : {}, calls: 0, stopped: false };
  const stop = stopButton(tally);
  for (const job of sent) {
    if (!going(tally, report)) break;
    report.replaceChildren(progress(`${words.doing}: ${num(tally.calls)} of ${calls(sent.length)}, ${num(tally.changed)} changed so far`, stop));
    try {
      await single(action, job.id);
      tally.changed += 1;
    } catch (error) {
      // A job that changed or went since the page was read is refused (409, 404): skipped by the API's code.
      if (!(error instanceof ApiError) || error.status === 0) throw error;
      tally.skipped[error.code] = (tally.skipped[error.code] ?? 0) + 1;
    }
    tally.calls += 1;
  }
  return tally;
}

/** @param {Action} action @param {string} id */
function single(action, id) {
  if (action === "delete") return api(jobPath(id), { method: "DELETE" });
  return api(`${jobPath(id)}/${action}`, { method: "POST", body: action === "cancel" ? { by: "dashboard" } : undefined });
}

/**
 * What a run did, in one line: "Retried: 3 matched, 2 changed, 1 skipped (1 not dead or cancelled)."
 * @param {Action} action
 * @param {Tally} tally
 * @param {boolean} selected whether the jobs were the ticked ones
 */
function outcome(action, tally, selected) {
  const skipped = Object.entries(tally.skipped);
  const total = skipped.reduce((sum, [, times]) => sum + times, 0);
  const reasons = skipped.length ? ` (${skipped.map(([reason, times]) => `${num(times)} ${reason.replaceAll("_", " ")}`).join(", ")})` : "";
  const stopped = tally.stopped ? ` Stopped after ${calls(tally.calls)}: the rest was not touched.` : "";
  return h("p", { class: "ok", id: "bulk-outcome" },
    `${ACTIONS[action].words.done}: ${num(tally.matched)} ${selected ? "selected" : "matched"}, ${num(tally.changed)} changed, ${num(total)} skipped${reasons}.${stopped}`);
}

/**
 * Whether a run goes on: not once Stop is pressed, nor once the view is left (its report is off the page).
 * @param {Tally} tally
 * @param {HTMLElement} report
 */
function going(tally, report) {
  if (!report.isConnected) tally.stopped = true;
  return !tally.stopped;
}

/** A Stop button that ends the run after the call under way. @param {Tally} tally */
function stopButton(tally) {
  return h("button", { type: "button", class: "secondary", onclick: (/** @type {Event} */ event) => {
    tally.stopped = true;
    /** @type {HTMLButtonElement} */ (event.currentTarget).disabled = true;
  } }, "Stop");
}

/** @param {string} text @param {HTMLElement} stop */
const progress = (text, stop) => h("p", { class: "bulk-progress" }, h("span", {}, text), " ", stop);

/**
 * Writes why nothing was sent (or nothing, when the person said no), for the caller to answer null.
 * @param {HTMLElement} report
 * @param {string | null} text
 * @returns {null}
 */
function said(report, text) {
  report.replaceChildren(text === null ? "" : h("p", { class: "muted" }, text));
  return null;
}

/** "21,000". @param {number} n */
const num = (n) => n.toLocaleString("en");

/** @param {number} n */
const jobs = (n) => `${num(n)} job${n === 1 ? "" : "s"}`;

/** @param {number} n */
const calls = (n) => `${num(n)} call${n === 1 ? "" : "s"}`;

/** @param {string} text */
const capital = (text) => text.charAt(0).toUpperCase() + text.slice(1);

/** "dead or cancelled". @param {string[]} statuses */
const or = (statuses) => statuses.length === 1 ? statuses[0] : `${statuses.slice(0, -1).join(", ")} or ${statuses.at(-1)}`;

/** "2 dead, 1 cancelled", in the order of a job's life. @param {Picked[]} picked */
function byStatus(picked) {
  return STATUSES.map((status) => [status, picked.filter((job) => job.status === status).length])
    .filter(([, n]) => n).map(([status, n]) => `${n} ${status}`).join(", ");
}
