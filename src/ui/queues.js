// @ts-check
// Every queue at a glance: jobs by status, how long the job due longest has
// waited, the stale writes fencing refused, and its controls (paused or
// running, its limit, the buttons that change them). Refreshes by itself,
// pausably.
import { api } from "./api.js";
import { errorNote, h } from "./dom.js";
import { duration } from "./format.js";
import { refreshing } from "./refreshing.js";
import { pushButton, pushDialog, pushedTo } from "./push-controls.js";
import { abilities, may, mayAtAll } from "./permit.js";
import { limits, queueButtons, settingsDialog, unset } from "./queue-controls.js";

const STATUSES = /** @type {const} */ (["queued", "scheduled", "leased", "done", "dead", "cancelled"]);

/**
 * @typedef {{ queue: string, jobs: Record<string, number>, oldestDueAgeMs: number | null,
 *   refused: { lastHour: number, total: number }, paused: boolean, topKeys: { key: string, waiting: number }[] }} QueueStats
 * @typedef {import("./queue-controls.js").QueueSettings} QueueSettings
 * @typedef {import("./queue-controls.js").Act} Act
 * @typedef {import("./push-controls.js").PushSettings} PushSettings
 */

/** @type {import("./app.js").View} */
export function queuesView(container, _params, signal) {
  const body = h("div", { class: "queues" });
  const note = h("div", { class: "action-note", id: "queue-note" });
  const { status, toggle, problem, refresh } = refreshing(load, signal);
  /** @type {Act} */
  const act = async (call, done) => {
    try {
      const answer = await call();
      note.replaceChildren(h("p", { class: "ok", role: "status" }, done(answer)));
    } catch (error) {
      note.replaceChildren(errorNote(error));
    }
    await refresh();
  };
  const edit = settingsDialog(async (answer) => {
    note.replaceChildren(h("p", { class: "ok", role: "status" }, `Saved ${answer.queue}: ${limits(answer)}.`));
    await refresh();
  }, signal);
  const openPush = pushDialog(async (message) => {
    note.replaceChildren(h("p", { class: "ok", role: "status" }, message));
    await refresh();
  }, signal);
  const create = mayAtAll("manage") && h("button", { type: "button", onclick: () => edit(null) }, "New queue");
  container.append(
    h("div", { class: "heading" }, h("h1", {}, "Queues"), h("div", { class: "controls" }, status, toggle, create)),
    h("p", { class: "muted", id: "abilities" }, abilities()),
    problem,
    note,
    body);
  return refresh();

  async function load() {
    const [{ queues }, { queues: settingsList }, { endpoints }] = await Promise.all([api("/v1/stats"), api("/v1/queues"), api("/v1/push")]);
    if (signal.aborted) return;
    /** @type {Map<string, QueueSettings>} */
    const byName = new Map(settingsList.map((/** @type {QueueSettings} */ s) => [s.queue, s]));
    /** @type {Map<string, PushSettings>} */
    const pushes = new Map(endpoints.map((/** @type {PushSettings} */ p) => [p.queue, p]));
    const row = (/** @type {QueueStats} */ stats) => queueRow(stats, byName.get(stats.queue) ?? unset(stats.queue), pushes.get(stats.queue), act, edit, openPush);
    body.replaceChildren(queues.length ? table(queues.map(row)) : empty());
  }
}

/** @param {HTMLTableRowElement[]} rows */
function table(rows) {
  // Ten columns do not fit every laptop: the table scrolls sideways in its box, the page does not.
  return h("div", { class: "table-scroll" }, h("table", { class: "stats" },
    h("thead", {}, h("tr", {},
      h("th", { scope: "col" }, "Queue"),
      h("th", { scope: "col" }, "State"),
      STATUSES.map((status) => h("th", { scope: "col", class: "num" }, status)),
      h("th", { scope: "col", class: "num", title: "How long the job due longest has waited to be claimed" }, "Due longest"),
      h("th", { scope: "col", class: "num", title: "Writes refused because their lease was no longer current" }, "Refused, last hour"),
      h("th", { scope: "col", class: "num" }, "Refused, ever"),
      h("th", { scope: "col", title: "Decided in the claim: at most this many current leases at once" }, "Limits"),
      h("th", { scope: "col" }, h("span", { class: "visually-hidden" }, "Actions")))),
    h("tbody", {}, rows)));
}

/**
 * @param {QueueStats} stats
 * @param {QueueSettings} settings
 * @param {PushSettings | undefined} push
 * @param {Act} act
 * @param {(settings: QueueSettings) => void} edit
 * @param {(queue: string, push: PushSettings | undefined) => void} openPush
 */
function queueRow(stats, settings, push, act, edit, openPush) {
  // A token that may not manage the queue sees none of its buttons (the server would refuse them: 403).
  const actions = may("manage", stats.queue) ? queueButtons(settings, act, edit) : null;
  actions?.append(pushButton(stats.queue, push, openPush));
  const jobsOf = (/** @type {string} */ status) => `#/jobs?${new URLSearchParams({ queue: stats.queue, status })}`;
  return h("tr", { "data-queue": stats.queue, class: settings.paused ? "paused" : null },
    h("th", { scope: "row" }, h("a", { href: `#/jobs?${new URLSearchParams({ queue: stats.queue })}` }, stats.queue),
      " ", h("a", { class: "queue-keys", href: `#/queue/${encodeURIComponent(stats.queue)}`, "aria-label": `Settings and keys of queue ${stats.queue}` }, "keys")),
    h("td", { "data-label": "state", "data-setting": "paused" },
      settings.paused ? h("span", { class: "status status-paused" }, "paused") : h("span", { class: "muted" }, "running")),
    STATUSES.map((status) => {
      const count = stats.jobs[status] ?? 0;
      const alarm = count > 0 && status === "dead";
      return h("td", { class: `num${alarm ? " alarm" : ""}`, "data-label": status, "data-stat": status },
        count > 0 ? h("a", { href: jobsOf(status) }, count) : count);
    }),
    h("td", { class: "num", "data-label": "due longest", "data-stat": "oldestDueAgeMs", "data-ms": stats.oldestDueAgeMs ?? "" },
      stats.oldestDueAgeMs === null ? "–" : duration(stats.oldestDueAgeMs)),
    h("td", { class: `num${stats.refused.lastHour > 0 ? " alarm" : ""}`, "data-label": "refused, last hour", "data-stat": "refused.lastHour" }, stats.refused.lastHour),
    h("td", { class: "num", "data-label": "refused, ever", "data-stat": "refused.total" }, stats.refused.total),
    h("td", { "data-label": "limits", "data-setting": "limits" }, limits(settings), push ? h("span", { class: "pushed", "data-setting": "push", title: push.url }, pushedTo(push)) : null),
    h("td", { class: "row-actions-cell" }, actions));
}

function empty() {
  return h("p", { class: "muted" }, "No queues yet: a queue appears with its first job (POST /v1/jobs), or once its limits are set with New queue.");
}
