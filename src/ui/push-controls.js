// @ts-check
// A queue's push endpoint from its row: the dialog that sets it, rotates its
// secret and stops it, each sent through the public API. The secret is shown
// once, when the API answers it (the first save, a rotation), and never read
// back: the server does not give it again.
import { api, queuePath } from "./api.js";
import { confirmAction, errorNote, field, h, showModal } from "./dom.js";

/**
 * @typedef {{ queue: string, url: string, timeoutMs: number, maxInFlight: number, rotating: boolean,
 *   rotatedAt: number | null, createdAt: number, updatedAt: number }} PushSettings
 */

/** @param {string} queue */
const pushPath = (queue) => `${queuePath(queue)}/push`;

/** Where a queue is pushed, in words: "pushed to mail.example, 10 at once". @param {PushSettings} push */
export function pushedTo(push) {
  let host = push.url;
  try {
    host = new URL(push.url).host;
  } catch {
    // Shown as it is.
  }
  return `pushed to ${host}, ${push.maxInFlight} at once`;
}

/**
 * The Push button of a queue's row: opens the push dialog of that queue.
 * @param {string} queue
 * @param {PushSettings | undefined} push its settings, if it is pushed
 * @param {(queue: string, push: PushSettings | undefined) => void} open
 */
export function pushButton(queue, push, open) {
  return h("button", { type: "button", class: "secondary", "aria-label": `Push of queue ${queue}`, onclick: () => open(queue, push) }, push ? "Push ✓" : "Push");
}

/**
 * The dialog of a queue's push endpoint: its URL, timeout and maxInFlight,
 * saved with PUT; Rotate secret and Stop pushing when it is pushed. A secret
 * the API answers is shown in the dialog, once, with what to do with it; a
 * refusal is shown in the dialog, which stays open to be put right.
 * @param {(message: string) => Promise<void>} changed what the page does once something changed
 * @param {AbortSignal} signal closes an open dialog when the view is left
 * @returns {(queue: string, push: PushSettings | undefined) => void}
 */
export function pushDialog(changed, signal) {
  return function open(queue, push) {
    const url = field("push-url", "Endpoint URL", "Each due job is POSTed here, signed (Standard Webhooks), its lease in the headers. A 2xx completes it with your answer's body as the result; 202 leaves the lease to you; anything else fails it.",
      { type: "url", required: true, spellcheck: "false", autocomplete: "off", placeholder: "https://", value: push?.url ?? "", autofocus: true });
    const timeout = field("push-timeout", "Timeout (ms)", "How long a delivery waits for the answer before it fails. Empty: 10000.",
      { type: "number", min: 1, max: 300000, step: 1, inputmode: "numeric", placeholder: "10000", value: push ? String(push.timeoutMs) : "" });
    const inFlight = field("push-max-in-flight", "At most at once", "Deliveries on their way at once (a job answered 202 counts until its lease ends). Empty: 10.",
      { type: "number", min: 1, max: 1000, step: 1, inputmode: "numeric", placeholder: "10", value: push ? String(push.maxInFlight) : "" });
    const note = h("div", { class: "action-note" });
    const revealed = h("div", { class: "secret-box" });
    const rotate = push ? h("button", { type: "button", class: "secondary", onclick: rotateSecret }, "Rotate secret") : null;
    const stop = push ? h("button", { type: "button", class: "danger", onclick: stopPushing }, "Stop pushing") : null;
    const dialog = h("dialog", { class: "settings-dialog push-dialog", "aria-labelledby": "push-title" },
      h("form", { onsubmit: submit },
        h("h2", { id: "push-title" }, `Push of queue ${queue}`),
        h("p", { class: "muted" }, push
          ? `Pushed now${push.rotating ? ": deliveries are signed with the secret of the last rotation and the one before it." : "."}`
          : "Not pushed: its jobs wait for workers to claim them. Once saved, the server claims them itself and POSTs each one."),
        url.row, timeout.row, inFlight.row,
        revealed,
        note,
        h("div", { class: "buttons" },
          stop, rotate,
          h("button", { type: "button", class: "secondary", onclick: () => dialog.close() }, "Close"),
          h("button", { type: "submit" }, push ? "Save push" : "Start pushing"))));
    showModal(dialog, signal);

    /** Shows a secret the API answered, once. @param {string} secret */
    function show(secret) {
      const box = h("input", { id: "push-secret", readonly: true, value: secret, spellcheck: "false", "aria-describedby": "push-secret-hint" });
      revealed.replaceChildren(
        h("label", { for: "push-secret" }, "Secret"),
        box,
        h("p", { class: "hint", id: "push-secret-hint" }, "Shown this once: keep it where the endpoint reads it, and check each delivery with verifyPush (fencelease/client)."));
      box.select();
    }

    /** @param {SubmitEvent} event */
    async function submit(event) {
      event.preventDefault();
      const number = (/** @type {HTMLInputElement} */ input) => (input.value === "" ? undefined : Number(input.value));
      const body = { url: url.input.value, timeoutMs: number(timeout.input), maxInFlight: number(inFlight.input) };
      let answer;
      try {
        answer = await api(pushPath(queue), { method: "PUT", body });
      } catch (error) {
        note.replaceChildren(errorNote(error));
        return;
      }
      if (answer.secret) {
        show(answer.secret);
        note.replaceChildren(h("p", { class: "ok", role: "status" }, `Pushing ${queue} to ${answer.url}.`));
        await changed(`Pushing ${queue}: ${pushedTo(answer)}.`);
        return; // open, so that the secret can be copied
      }
      dialog.close();
      await changed(`Saved the push of ${queue}: ${pushedTo(answer)}.`);
    }

    async function rotateSecret() {
      try {
        const answer = await api(`${pushPath(queue)}/rotate`, { method: "POST" });
        show(answer.secret);
        note.replaceChildren(h("p", { class: "ok", role: "status" }, "A new secret: deliveries are signed with it and the one before until the next rotation."));
      } catch (error) {
        note.replaceChildren(errorNote(error));
      }
    }

    async function stopPushing() {
      if (!(await confirmAction(`Stop pushing ${queue}?`, "No more of its jobs are POSTed to the endpoint; they wait for workers. Deliveries on their way end as usual.", "Stop pushing"))) return;
      try {
        await api(pushPath(queue), { method: "DELETE" });
      } catch (error) {
        note.replaceChildren(errorNote(error));
        return;
      }
      dialog.close();
      await changed(`Stopped pushing ${queue}: its jobs wait for workers.`);
    }
  };
}
