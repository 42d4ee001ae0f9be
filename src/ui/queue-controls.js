// @ts-check
// The queue controls beside the numbers: pause and resume a queue, and set its
// limits in a dialog, each sent through the public API. The claims decide by
// them on the server; the page only asks, and shows what the API answers.
import { api, queuePath } from "./api.js";
import { errorNote, field, h, showModal } from "./dom.js";

/**
 * @typedef {{ queue: string, paused: boolean, maxLeased: number | null, ratePerSecond: number | null, burst: number | null,
 *   maxLeasedPerKey: number | null, keyRatePerSecond: number | null, keyBurst: number | null, orderedByKey: boolean, fairByKey: boolean }} QueueSettings
 */

/**
 * What a control does once clicked: sends `call`, says `done` of what it
 * answers, or shows the API's refusal, then reads the queues again.
 * @typedef {(call: () => Promise<QueueSettings>, done: (settings: QueueSettings) => string) => Promise<void>} Act
 */

/** The settings of a queue's keys when none is set. */
const NO_KEY_LIMITS = { maxLeasedPerKey: null, keyRatePerSecond: null, keyBurst: null, orderedByKey: false, fairByKey: false };

/** A queue that was never set: running, no limit. @param {string} queue @returns {QueueSettings} */
export const unset = (queue) => ({ queue, paused: false, maxLeased: null, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS });

/** The settings of a queue's keys, which the dialog does not show: a save sends them back as they are. @param {QueueSettings | null} settings */
function keyLimits(settings) {
  if (settings === null) return NO_KEY_LIMITS;
  const { maxLeasedPerKey, keyRatePerSecond, keyBurst, orderedByKey, fairByKey } = settings;
  return { maxLeasedPerKey, keyRatePerSecond, keyBurst, orderedByKey, fairByKey };
}

/** The limits of a queue, in words: "max leased 5, 10/s burst 20", or "no limit". @param {QueueSettings} settings */
export function limits(settings) {
  const parts = [];
  if (settings.maxLeased !== null) parts.push(`max leased ${settings.maxLeased}`);
  if (settings.ratePerSecond !== null) parts.push(`${settings.ratePerSecond}/s${settings.burst === null ? "" : ` burst ${settings.burst}`}`);
  return parts.length ? parts.join(", ") : "no limit";
}

/**
 * The Pause or Resume button of one queue's row, and its Settings button, which
 * opens the settings dialog filled with the queue's settings.
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
 * The dialog that sets a queue's settings with PUT /v1/queues/{queue}, which
 * replaces them all (those of its keys are sent back as they are). Opened from a queue's row, it is that queue's, filled
 * with what is set now; opened by New queue (`null`), it asks for a name too,
 * which sets a queue before its first job. A refusal of the API is shown in the
 * dialog, which stays open to be put right; a success closes it.
 * @param {(settings: QueueSettings) => Promise<void>} saved what the page does with the settings saved
 * @param {AbortSignal} signal closes an open dialog when the view is left
 * @returns {(settings: QueueSettings | null) => void}
 */
export function settingsDialog(saved, signal) {
  return function open(settings) {
    const value = (/** @type {number | null | undefined} */ n) => (n === null || n === undefined ? "" : String(n));
    const name = settings ? null : field("settings-queue", "Queue name", "A queue with no jobs yet is listed once saved; a queue that exists gets these limits in place of its own.",
      { required: true, spellcheck: "false", autocomplete: "off", autofocus: true });
    const maxLeased = field("settings-max-leased", "Max leased", "The most of its jobs workers may hold at once. Empty: no limit.",
      { type: "number", min: 1, step: 1, inputmode: "numeric", placeholder: "no limit", value: value(settings?.maxLeased), autofocus: settings !== null });
    const rate = field("settings-rate", "Claims per second", "How many of its jobs workers may take per second, all of them together. Empty: no limit.",
      { type: "number", min: 0, step: "any", inputmode: "decimal", placeholder: "no limit", value: value(settings?.ratePerSecond) });
    const burst = field("settings-burst", "Burst", "How many may be taken at once after a quiet spell; needs claims per second. Empty: the rate, rounded up.",
      { type: "number", min: 1, step: 1, inputmode: "numeric", placeholder: "the rate", value: value(settings?.burst) });
    const note = h("div", { class: "action-note" });
    const dialog = h("dialog", { class: "settings-dialog", "aria-labelledby": "settings-title" },
      h("form", { onsubmit: submit },
        h("h2", { id: "settings-title" }, settings ? `Settings of queue ${settings.queue}` : "Settings of a new queue"),
        h("p", { class: "muted" }, "The server keeps every worker's claims within these limits. Jobs already taken are not taken back."),
        name?.row, maxLeased.row, rate.row, burst.row,
        note,
        h("div", { class: "buttons" },
          h("button", { type: "button", class: "secondary", onclick: () => dialog.close() }, "Cancel"),
          h("button", { type: "submit" }, "Save settings"))));
    showModal(dialog, signal);

    /** @param {SubmitEvent} event */
    async function submit(event) {
      event.preventDefault();
      const queue = settings ? settings.queue : (name?.input.value ?? "");
      const number = (/** @type {HTMLInputElement} */ input) => (input.value === "" ? null : Number(input.value));
      const body = { maxLeased: number(maxLeased.input), ratePerSecond: number(rate.input), burst: number(burst.input), ...keyLimits(settings) };
      let answer;
      try {
        answer = await api(queuePath(queue), { method: "PUT", body });
      } catch (error) {
        note.replaceChildren(errorNote(error));
        return;
      }
      dialog.close();
      await saved(answer);
    }
  };
}
