// @ts-check
// Building the page: elements from data, and the one dialog that confirms an action.

/** @typedef {Node | string | number | null | undefined | false} Child */

/**
 * An element with attributes, listeners ("onclick") and children. Children that
 * are strings become text, never HTML: ids, owners, payloads and error messages
 * are other people's strings.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Record<string, unknown>} [props]
 * @param {...(Child | Child[])} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) element.addEventListener(key.slice(2), /** @type {EventListener} */ (value));
    else element.setAttribute(key, value === true ? "" : String(value));
  }
  return withChildren(element, children);
}

/**
 * Appends children to `element` and answers it: strings as text, never HTML; null, undefined and false are skipped.
 * @template {Element} E
 * @param {E} element
 * @param {(Child | Child[])[]} children
 * @returns {E}
 */
function withChildren(element, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : String(child));
  }
  return element;
}

const SVG_NS = "http://www.w3.org/2000/svg";

/**
 * An SVG element with attributes and children, as `h` builds HTML ones (strings become text).
 * @param {string} tag such as "rect"
 * @param {Record<string, string | number | null | undefined>} [attributes]
 * @param {...(Child | Child[])} children
 * @returns {SVGElement}
 */
export function svg(tag, attributes = {}, ...children) {
  const element = /** @type {SVGElement} */ (document.createElementNS(SVG_NS, tag));
  for (const [key, value] of Object.entries(attributes)) if (value !== undefined && value !== null) element.setAttribute(key, String(value));
  return withChildren(element, children);
}

/**
 * A message of the API or of the page, announced to screen readers.
 * @param {unknown} error
 */
export function errorNote(error) {
  return h("p", { class: "error", role: "alert" }, String(error));
}

/**
 * Asks before an action: a modal dialog with the action's own button and one that dismisses it.
 * @param {string} title
 * @param {string} text
 * @param {string} action the button's label, such as "Retry job"
 * @param {string} [dismiss] the other button's label: "Cancel", unless the action is itself a cancel
 * @returns {Promise<boolean>}
 */
export function confirmAction(title, text, action, dismiss = "Cancel") {
  const dialog = h("dialog", { class: "confirm", "aria-labelledby": "confirm-title" });
  const form = h("form", { method: "dialog" },
    h("h2", { id: "confirm-title" }, title),
    h("p", {}, text),
    h("div", { class: "buttons" },
      h("button", { value: "cancel", class: "secondary" }, dismiss),
      h("button", { value: "ok", class: "danger" }, action)));
  dialog.append(form);
  document.body.append(dialog);
  dialog.showModal();
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => {
      resolve(dialog.returnValue === "ok");
      dialog.remove();
    });
  });
}

/**
 * A labelled input with its hint (the input's aria-describedby), as the settings dialogs lay them out.
 * @param {string} id
 * @param {string} label
 * @param {string} hint
 * @param {Record<string, unknown>} props the input's attributes
 */
export function field(id, label, hint, props) {
  const input = h("input", { id, name: id, "aria-describedby": `${id}-hint`, ...props });
  return { input, row: h("div", { class: "field" }, h("label", { for: id }, label), input, h("p", { class: "hint", id: `${id}-hint` }, hint)) };
}

/**
 * Shows `dialog` as a modal until it is closed, or `signal` aborts (the view
 * is left); once closed, it is taken off the page.
 * @param {HTMLDialogElement} dialog
 * @param {AbortSignal} signal
 */
export function showModal(dialog, signal) {
  const leave = () => dialog.close();
  signal.addEventListener("abort", leave);
  dialog.addEventListener("close", () => {
    signal.removeEventListener("abort", leave);
    dialog.remove();
  });
  document.body.append(dialog);
  dialog.showModal();
}
