// @ts-check
// What a view whose numbers refresh by themselves shares: the line that says
// when they were read, the button that pauses and resumes the reading, the
// box that says why the last read failed (the numbers on screen stay), and the
// timer, stopped when the view is left.
import { errorNote, h } from "./dom.js";
import { moment } from "./format.js";

/** How often the numbers are read again. */
export const REFRESH_MS = 3_000;

/**
 * Reads a view's numbers now and every REFRESH_MS until `signal` aborts or
 * the reader pauses: `load` reads and shows them (it shows nothing once
 * `signal` has aborted; a throw keeps the last ones and is shown in
 * `problem`). Answers the elements to place (`status`, `toggle`, `problem`)
 * and `refresh`, to read again at once (after an action).
 * @param {() => Promise<void>} load
 * @param {AbortSignal} signal
 */
export function refreshing(load, signal) {
  let stopped = false;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  const status = h("span", { class: "muted", id: "refreshed" });
  const toggle = h("button", { type: "button", class: "secondary", "aria-pressed": "false", onclick: flip }, "Pause updates");
  const problem = h("div");
  signal.addEventListener("abort", () => clearTimeout(timer));

  async function refresh() {
    clearTimeout(timer);
    try {
      await load();
      if (signal.aborted) return;
      problem.replaceChildren();
      status.textContent = `Updated ${moment(Date.now()).slice(11, 19)}${stopped ? ", paused" : `, every ${REFRESH_MS / 1000} s`}`;
    } catch (error) {
      // Keep the last numbers on screen, and say why they are not new.
      if (!signal.aborted) problem.replaceChildren(errorNote(error));
    }
    if (!stopped && !signal.aborted) timer = setTimeout(refresh, REFRESH_MS);
  }

  function flip() {
    stopped = !stopped;
    toggle.textContent = stopped ? "Resume updates" : "Pause updates";
    toggle.setAttribute("aria-pressed", String(stopped));
    if (stopped) {
      clearTimeout(timer);
      status.textContent = status.textContent.replace(/, every .*$/, ", paused");
    } else void refresh();
  }

  return { status, toggle, problem, refresh };
}
