// @ts-check
// Every queue at a glance: jobs by status, how long the job due longest has
// waited, and the stale writes fencing refused. Refreshes by itself, pausably.
import { api } from "./api.js";
import { errorNote, h } from "./dom.js";
import { duration, moment } from "./format.js";

/** How often the numbers are read again. */
export const REFRESH_MS = 3_000;

const STATUSES = /** @type {const} */ (["queued", "scheduled", "leased", "done", "dead", "cancelled"]);

/**
 * @typedef {{ queue: string, jobs: Record<string, number>, oldestDueAgeMs: number | null,
 *   refused: { lastHour: number, total: number } }} QueueStats
 */

/** @type {import("./app.js").View} */
export function queuesView(container, _params, signal) {
  let paused = false;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  const status = h("span", { class: "muted", id: "refreshed" });
  const toggle = h("button", { type: "button", class: "secondary", "aria-pressed": "false", onclick: flip }, "Pause");
  const body = h("div", { class: "queues" });
  const problem = h("div");
  container.append(
    h("div", { class: "heading" }, h("h1", {}, "Queues"), h("div", { class: "controls" }, status, toggle)),
    problem,
    body);
  signal.addEventListener("abort", () => clearTimeout(timer));
  return refresh();

  async function refresh() {
    clearTimeout(timer);
    try {
      const { queues } = await api("/v1/stats");
      if (signal.aborted) return;
      body.replaceChildren(queues.length ? table(queues) : empty());
      problem.replaceChildren();
      status.textContent = `Updated ${moment(Date.now()).slice(11, 19)}${paused ? ", paused" : `, every ${REFRESH_MS / 1000} s`}`;
    } catch (error) {
      // Keep the last numbers on screen, and say why they are not new.
      if (!signal.aborted) problem.replaceChildren(errorNote(error));
    }
    if (!paused && !signal.aborted) timer = setTimeout(refresh, REFRESH_MS);
  }

  function flip() {
    paused = !paused;
    toggle.textContent = paused ? "Resume" : "Pause";
    toggle.setAttribute("aria-pressed", String(paused));
    if (paused) {
      clearTimeout(timer);
      status.textContent = status.textContent.replace(/, every .*$/, ", paused");
    } else void refresh();
  }
}

/** @param {QueueStats[]} queues */
function table(queues) {
  return h("table", { class: "stats" },
    h("thead", {}, h("tr", {},
      h("th", { scope: "col" }, "Queue"),
      STATUSES.map((status) => h("th", { scope: "col", class: "num" }, status)),
      h("th", { scope: "col", class: "num", title: "How long the job due longest has waited to be claimed" }, "Due longest"),
      h("th", { scope: "col", class: "num", title: "Writes refused because their lease was no longer current" }, "Refused, last hour"),
      h("th", { scope: "col", class: "num" }, "Refused, ever"))),
    h("tbody", {}, queues.map(row)));
}

/** @param {QueueStats} stats */
function row(stats) {
  const jobsOf = (/** @type {string} */ status) => `#/jobs?${new URLSearchParams({ queue: stats.queue, status })}`;
  return h("tr", { "data-queue": stats.queue },
    h("th", { scope: "row" }, h("a", { href: `#/jobs?${new URLSearchParams({ queue: stats.queue })}` }, stats.queue)),
    STATUSES.map((status) => {
      const count = stats.jobs[status] ?? 0;
      const alarm = count > 0 && status === "dead";
      return h("td", { class: `num${alarm ? " alarm" : ""}`, "data-label": status, "data-stat": status },
        count > 0 ? h("a", { href: jobsOf(status) }, count) : count);
    }),
    h("td", { class: "num", "data-label": "due longest", "data-stat": "oldestDueAgeMs", "data-ms": stats.oldestDueAgeMs ?? "" },
      stats.oldestDueAgeMs === null ? "–" : duration(stats.oldestDueAgeMs)),
    h("td", { class: `num${stats.refused.lastHour > 0 ? " alarm" : ""}`, "data-label": "refused, last hour", "data-stat": "refused.lastHour" }, stats.refused.lastHour),
    h("td", { class: "num", "data-label": "refused, ever", "data-stat": "refused.total" }, stats.refused.total));
}

function empty() {
  return h("p", { class: "muted" }, "No queues yet: a queue appears with its first job (POST /v1/jobs).");
}
