// @ts-check
// Recurring schedules: each with its queue, when it fires and when it fires
// next, a Delete button, and a form that creates a schedule or replaces one of
// the same name. The server fires them (its maintenance, the Worker's cron);
// the page only reads and writes them through the public API.
import { api } from "./api.js";
import { confirmAction, errorNote, h } from "./dom.js";
import { moment } from "./format.js";
import { may, mayAtAll } from "./permit.js";

/**
 * @typedef {{ name: string, queue: string, cron: string | null, everyMs: number | null, timezone: string,
 *   payload: unknown, priority: number, maxAttempts: number, nextFireAt: number | null, lastFireAt: number | null,
 *   createdAt: number, updatedAt: number }} Schedule
 */

/** @param {string} name */
const schedulePath = (name) => `/v1/schedules/${encodeURIComponent(name)}`;

/** When a schedule fires, in words. @param {Schedule} schedule */
const cadence = (schedule) => (schedule.cron === null ? `every ${schedule.everyMs} ms` : `${schedule.cron} (${schedule.timezone})`);

/** A moment in the reader's time zone, its exact instant in `datetime`. @param {number} at */
const instant = (at) => h("time", { datetime: new Date(at).toISOString() }, moment(at));

/** @type {import("./app.js").View} */
export async function schedulesView(container, _params, signal) {
  const note = h("div", { class: "action-note", id: "schedule-note" });
  const list = h("div", { class: "schedules" });
  /** Sends a call, says what it did or shows the API's refusal, then reads the list again. */
  const act = async (/** @type {() => Promise<unknown>} */ call, /** @type {string} */ done) => {
    try {
      await call();
      note.replaceChildren(h("p", { class: "ok", role: "status" }, done));
    } catch (error) {
      note.replaceChildren(errorNote(error));
    }
    await load();
  };
  const complain = (/** @type {string} */ message) => note.replaceChildren(errorNote(message));
  container.append(h("div", { class: "heading" }, h("h1", {}, "Schedules")), note, list);
  if (mayAtAll("manage")) container.append(scheduleForm(act, complain));
  await load();

  async function load() {
    const { schedules } = await api("/v1/schedules");
    if (signal.aborted) return;
    list.replaceChildren(schedules.length ? table(schedules, act) : h("p", { class: "muted" }, "No schedules yet: create one below (PUT /v1/schedules/{name})."));
  }
}

/**
 * @param {Schedule[]} schedules
 * @param {(call: () => Promise<unknown>, done: string) => Promise<void>} act
 */
function table(schedules, act) {
  return h("table", { class: "schedules" },
    h("thead", {}, h("tr", {}, ["Name", "Queue", "Fires", "Next fire", "Last fire", "Job"].map((name) => h("th", { scope: "col" }, name)),
      h("th", { scope: "col" }, h("span", { class: "visually-hidden" }, "Actions")))),
    h("tbody", {}, schedules.map((schedule) => h("tr", { "data-schedule": schedule.name },
      h("th", { scope: "row" }, schedule.name),
      h("td", { "data-label": "queue" }, h("a", { href: `#/jobs?${new URLSearchParams({ queue: schedule.queue })}` }, schedule.queue)),
      h("td", { "data-label": "fires", "data-field": "cadence" }, cadence(schedule)),
      h("td", { "data-label": "next fire", "data-field": "nextFireAt" }, schedule.nextFireAt === null ? "–" : instant(schedule.nextFireAt)),
      h("td", { "data-label": "last fire", "data-field": "lastFireAt" }, schedule.lastFireAt === null ? "never yet" : instant(schedule.lastFireAt)),
      h("td", { "data-label": "job" }, `priority ${schedule.priority}, ${schedule.maxAttempts} attempts`),
      h("td", { class: "row-actions-cell" }, may("manage", schedule.queue) && h("button", { type: "button", class: "danger", "aria-label": `Delete schedule ${schedule.name}`, onclick: async () => {
        const ok = await confirmAction("Delete this schedule?", `${schedule.name} fires no more. The jobs it has enqueued stay in queue ${schedule.queue}.`, "Delete schedule");
        if (ok) await act(() => api(schedulePath(schedule.name), { method: "DELETE" }), `Deleted schedule ${schedule.name}.`);
      } }, "Delete"))))));
}

/**
 * The form that puts a schedule: a new name creates it, a name that exists replaces it.
 * @param {(call: () => Promise<unknown>, done: string) => Promise<void>} act
 * @param {(message: string) => void} complain shows what is wrong before anything is sent
 */
function scheduleForm(act, complain) {
  /** @param {string} id @param {string} label @param {Record<string, unknown>} props */
  const field = (id, label, props) => {
    const input = h("input", { id: `schedule-${id}`, name: id, spellcheck: "false", autocomplete: "off", ...props });
    return { input, cell: h("span", {}, h("label", { for: `schedule-${id}` }, label), input) };
  };
  const name = field("name", "Name", { required: true });
  const queue = field("queue", "Queue", { required: true });
  const cron = field("cron", "Cron", { placeholder: "0 3 * * *" });
  const timezone = field("timezone", "Time zone", { placeholder: "UTC" });
  const everyMs = field("every-ms", "Every (ms)", { type: "number", min: 1000, step: 1, placeholder: "60000" });
  const payload = field("payload", "Payload (JSON)", { placeholder: '{"kind":"daily"}' });
  const priority = field("priority", "Priority", { type: "number", step: 1, placeholder: "0" });
  const maxAttempts = field("max-attempts", "Max attempts", { type: "number", min: 1, step: 1, placeholder: "default" });
  const form = h("form", { class: "settings", "aria-labelledby": "schedule-form-title", onsubmit: submit },
    h("h2", { id: "schedule-form-title" }, "Put a schedule"),
    h("p", { class: "muted" }, "A cron expression (with its time zone) or an interval, not both. A name that exists is replaced."),
    h("div", { class: "fields-row" }, [name, queue, cron, timezone, everyMs, payload, priority, maxAttempts].map((f) => f.cell),
      h("button", { type: "submit" }, "Save schedule")));

  /** @param {SubmitEvent} event */
  function submit(event) {
    event.preventDefault();
    /** @type {Record<string, unknown>} */
    const body = { queue: queue.input.value };
    if (cron.input.value) body.cron = cron.input.value;
    if (timezone.input.value) body.timezone = timezone.input.value;
    if (everyMs.input.value) body.everyMs = Number(everyMs.input.value);
    if (priority.input.value) body.priority = Number(priority.input.value);
    if (maxAttempts.input.value) body.maxAttempts = Number(maxAttempts.input.value);
    if (payload.input.value) {
      try {
        body.payload = JSON.parse(payload.input.value);
      } catch {
        return complain(`The payload is not JSON (a string needs quotes: "text"): ${payload.input.value}`);
      }
    }
    const named = name.input.value;
    void act(() => api(schedulePath(named), { method: "PUT", body }), `Saved schedule ${named}.`);
  }
  return form;
}
