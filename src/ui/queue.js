// @ts-check
// One queue: its settings, those of its keys among them (docs/queues.md#keys),
// charts of what it did over the last hour, day or month, and a table of its
// keys with open jobs: how many each has waiting and leased, and why a key
// holds jobs back. A page of keys at a time; the range and the cursor are in
// the URL, so a view is a link. It refreshes by itself, pausably.
import { api, queuePath } from "./api.js";
import { charts, rangeButtons, rangeOf, seriesQuery } from "./charts.js";
import { h } from "./dom.js";
import { refreshing } from "./refreshing.js";

/**
 * A queue's settings as GET /v1/queues/{queue} answers them, its keys' included.
 * @typedef {{ queue: string, paused: boolean, maxLeased: number | null, ratePerSecond: number | null, burst: number | null,
 *   maxLeasedPerKey?: number | null, keyRatePerSecond?: number | null, keyBurst?: number | null,
 *   orderedByKey?: boolean, fairByKey?: boolean }} QueueSettings
 * @typedef {{ key: string, waiting: number, leased: number, heldBack: "key_full" | "key_ordered" | "key_rate_limited" | null }} KeyStats
 */

/** Why a key holds jobs back, in words. */
const HELD_BACK = {
  key_full: "full: its maxLeasedPerKey leases",
  key_ordered: "in order: its first job is leased or waits for its time",
  key_rate_limited: "rate limited: no token in its bucket",
};

/** The settings of a queue's keys, as label and value pairs. @param {QueueSettings} s */
function keySettings(s) {
  const none = "none";
  return [
    ["Leases a key", s.maxLeasedPerKey == null ? "no limit" : String(s.maxLeasedPerKey)],
    ["Key rate", s.keyRatePerSecond == null ? none : `${s.keyRatePerSecond}/s, burst ${s.keyBurst}`],
    ["Ordered by key", s.orderedByKey ? "yes: one job at a time a key, in order" : "no"],
    ["Fair between keys", s.fairByKey ? "yes: keys take turns" : "no"],
  ];
}

/** @type {import("./app.js").View} */
export function queueView(container, params, signal) {
  const queue = params.get("queue") ?? "";
  const cursor = params.get("cursor");
  const range = rangeOf(params.get("range"));
  const activity = h("div", { class: "charts", id: "queue-charts" });
  const settings = h("dl", { class: "settings", id: "queue-settings" });
  const keys = h("div", { class: "keys", id: "queue-keys" });
  const { status, toggle, problem, refresh } = refreshing(load, signal);
  container.append(
    h("p", {}, h("a", { href: "#/" }, "← Queues")),
    h("div", { class: "heading" }, h("h1", {}, "Queue ", h("span", { class: "queue-name" }, queue)), h("div", { class: "controls" }, status, toggle)),
    problem,
    h("h2", {}, "Settings"),
    settings,
    h("div", { class: "heading charts-heading" }, h("h2", {}, "What the queue did"), rangeButtons(range, (to) => queueHref(queue, params, { range: to }))),
    activity,
    h("h2", {}, "Keys with open jobs"),
    keys);
  return refresh();

  async function load() {
    const page = `${queuePath(queue)}/keys${cursor === null ? "" : `?${new URLSearchParams({ cursor })}`}`;
    const series = `${queuePath(queue)}/series?${seriesQuery(range, Date.now())}`;
    // The charts are a part of the page: a series the server refuses (an older
    // server, a failing read) says so in their place, and the rest still shows.
    const [queueSettings, { keys: rows, nextCursor }, points] = await Promise.all([api(queuePath(queue)), api(page), api(series).catch((/** @type {Error} */ error) => error)]);
    if (signal.aborted) return;
    settings.replaceChildren(...settingPairs(queueSettings).flatMap(([label, value]) => [h("dt", {}, label), h("dd", { "data-setting": label }, value)]));
    activity.replaceChildren(...(points instanceof Error ? [h("p", { class: "muted", id: "charts-problem" }, `The charts could not be read: ${points.message}`)] : charts(points, range)));
    keys.replaceChildren(rows.length ? keyTable(rows) : h("p", { class: "muted" }, cursor === null ? "No key has an open job in this queue." : "No more keys."), pager(queue, params, nextCursor));
  }
}

/** The queue's settings, then its keys'. @param {QueueSettings} s @returns {string[][]} */
function settingPairs(s) {
  return [
    ["State", s.paused ? "paused" : "running"],
    ["Leases at most", s.maxLeased === null ? "no limit" : String(s.maxLeased)],
    ["Rate", s.ratePerSecond === null ? "none" : `${s.ratePerSecond}/s, burst ${s.burst}`],
    ...keySettings(s),
  ];
}

/** @param {KeyStats[]} rows */
function keyTable(rows) {
  return h("div", { class: "table-scroll" }, h("table", { class: "stats" },
    h("thead", {}, h("tr", {},
      h("th", { scope: "col" }, "Key"),
      h("th", { scope: "col", class: "num", title: "Open and not leased now: queued or scheduled, let in or held back" }, "Waiting"),
      h("th", { scope: "col", class: "num" }, "Leased"),
      h("th", { scope: "col" }, "Held back"))),
    h("tbody", {}, rows.map((row) => h("tr", { "data-key": row.key },
      h("th", { scope: "row" }, row.key),
      h("td", { class: "num", "data-stat": "waiting" }, row.waiting),
      h("td", { class: "num", "data-stat": "leased" }, row.leased),
      h("td", { "data-stat": "heldBack", "data-reason": row.heldBack ?? "" }, row.heldBack === null ? h("span", { class: "muted" }, "–") : HELD_BACK[row.heldBack]))))));
}

/** Links to the first page and the next one, in the same range. @param {string} queue @param {URLSearchParams} params @param {string | null} next */
function pager(queue, params, next) {
  const cursor = params.get("cursor");
  return h("p", { class: "pager" },
    cursor === null ? null : h("a", { href: queueHref(queue, params, { cursor: null }) }, "First keys"),
    cursor !== null && next !== null ? " · " : null,
    next === null ? null : h("a", { href: queueHref(queue, params, { cursor: next }), id: "next-keys" }, "Next keys"));
}

/**
 * The link to this page with some of its state changed (null: dropped), the rest kept.
 * @param {string} queue @param {URLSearchParams} params @param {Record<string, string | null>} changes
 */
function queueHref(queue, params, changes) {
  const kept = new URLSearchParams(params);
  kept.delete("queue"); // the router's, from the path
  for (const [name, value] of Object.entries(changes)) value === null ? kept.delete(name) : kept.set(name, value);
  const query = kept.toString();
  return `#/queue/${encodeURIComponent(queue)}${query ? `?${query}` : ""}`;
}
