// @ts-check
// The queue controls beside the numbers: pause and resume a queue, and set its
// limit of current leases, each sent through the public API. The claims decide
// by them on the server; the page only asks, and shows what the API answers.
import { api, queuePath } from "./api.js";
import { h } from "./dom.js";

/** @typedef {{ queue: string, paused: boolean, maxLeased: number | null, ratePerSecond: number | null, burst: number | null }} QueueSettings */

/**
 * What a control does once clicked: sends `call`, says `done` of what it
 * answers, or shows the API's refusal, then reads the queues again.
 * @typedef {(call: () => Promise<QueueSettings>, done: (settings: QueueSettings) => string) => Promise<void>} Act
 */

/** A queue that was never set: running, no limit. @param {string} queue @returns {QueueSettings} */
export const unset = (queue) => ({ queue, paused: false, maxLeased: null, ratePerSecond: null, burst: null });

/** The limits of a queue, in words: "max leased 5, 10/s burst 20", or "no limit". @param {QueueSettings} settings */
export function limits(settings) {
  const parts = [];
  if (settings.maxLeased !== null) parts.push(`max leased ${settings.maxLeased}`);
  if (settings.ratePerSecond !== null) parts.push(`${settings.ratePerSecond}/s${settings.burst === null ? "" : ` burst ${settings.burst}`}`);
  return parts.length ? parts.join(", ") : "no limit";
}

/**
 * The Pause or Resume button of one queue's row, and its Settings button, which
 * fills the settings form with the queue's settings.
 * @param {QueueSettings} settings
 * @param {Act} act
 * @param {(settings: QueueSettings) => void} edit
 */
export function queueButtons(settings, act, edit) {
  const { queue, paused } = settings;
  const verb = paused ? "resume" : "pause";
  const toggle = h("button", { type: "button", class: paused ? "" : "secondary", "aria-label": `${paused ? "Resume" : "Pause"} queue ${queue}`,
    onclick: () => act(() => api(`${queuePath(queue)}/${verb}`, { method: "POST" }),
      (answer) => (answer.paused ? `Paused ${queue}: claims take none of its jobs until it is resumed; leases held go on.` : `Resumed ${queue}: its jobs can be claimed again.`)),
  }, paused ? "Resume" : "Pause");
  const settingsButton = h("button", { type: "button", class: "secondary", "aria-label": `Settings of queue ${queue}`, onclick: () => edit(settings) }, "Settings");
  return h("div", { class: "row-actions" }, toggle, settingsButton);
}

/**
 * The form that sets a queue's settings with PUT /v1/queues/{queue}: any queue,
 * one listed or not yet. `edit` fills it with a queue's settings.
 * @param {Act} act
 */
export function settingsForm(act) {
  const queue = h("input", { id: "settings-queue", name: "queue", required: true, spellcheck: "false", autocomplete: "off" });
  const maxLeased = h("input", { id: "settings-max-leased", name: "maxLeased", type: "number", min: 1, step: 1, inputmode: "numeric", placeholder: "no limit" });
  const rate = h("input", { id: "settings-rate", name: "ratePerSecond", type: "number", min: 0, step: "any", inputmode: "decimal", placeholder: "no limit" });
  const burst = h("input", { id: "settings-burst", name: "burst", type: "number", min: 1, step: 1, inputmode: "numeric", placeholder: "default" });
  const form = h("form", { class: "settings", "aria-labelledby": "settings-title", onsubmit: submit },
    h("h2", { id: "settings-title" }, "Queue settings"),
    h("p", { class: "muted" }, "Claims decide by these in the database, in the claim itself. Empty: no limit; a burst needs a rate (default: the rate, rounded up)."),
    h("div", { class: "fields-row" },
      h("span", {}, h("label", { for: "settings-queue" }, "Queue"), queue),
      h("span", {}, h("label", { for: "settings-max-leased" }, "Max leased"), maxLeased),
      h("span", {}, h("label", { for: "settings-rate" }, "Claims per second"), rate),
      h("span", {}, h("label", { for: "settings-burst" }, "Burst"), burst),
      h("button", { type: "submit" }, "Save settings")));

  /** @param {SubmitEvent} event */
  function submit(event) {
    event.preventDefault();
    const name = queue.value;
    const number = (/** @type {HTMLInputElement} */ input) => (input.value === "" ? null : Number(input.value));
    const body = { maxLeased: number(maxLeased), ratePerSecond: number(rate), burst: number(burst) };
    void act(() => api(queuePath(name), { method: "PUT", body }), (answer) => `Saved ${answer.queue}: ${limits(answer)}.`);
  }

  /** @param {QueueSettings} settings */
  function edit(settings) {
    queue.value = settings.queue;
    maxLeased.value = settings.maxLeased === null ? "" : String(settings.maxLeased);
    rate.value = settings.ratePerSecond === null ? "" : String(settings.ratePerSecond);
    burst.value = settings.burst === null ? "" : String(settings.burst);
    maxLeased.focus();
  }
  return { form, edit };
}
