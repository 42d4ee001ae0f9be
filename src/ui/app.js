// @ts-check
// The dashboard: sign-in, then one view at a time, chosen by the URL's hash so
// that links, reloads and the back button work without any server routing:
//   #/                                  queues
//   #/jobs?queue=&status=&idPrefix=…&cursor=  a page of the jobs a search finds
//   #/job/<id>                          one job and its history
//   #/queue/<queue>?cursor=             one queue: its settings and its keys
//   #/schedules                         recurring schedules
import { api, ApiError, token, whenUnauthorized } from "./api.js";
import { errorNote, h } from "./dom.js";
import { jobView } from "./job.js";
import { jobsView } from "./jobs.js";
import { scope, signedInAs } from "./permit.js";
import { queuesView } from "./queues.js";
import { queueView } from "./queue.js";
import { schedulesView } from "./schedules.js";

/** @typedef {(container: HTMLElement, params: URLSearchParams, signal: AbortSignal) => void | Promise<void>} View */

const main = /** @type {HTMLElement} */ (document.getElementById("main"));
const session = /** @type {HTMLElement} */ (document.getElementById("session"));

/** Stops the view on screen: its timers and its requests' rendering. */
let leave = new AbortController();

/** @returns {{ view: View, params: URLSearchParams }} */
function route() {
  const [path = "", query = ""] = location.hash.replace(/^#/, "").split("?");
  const params = new URLSearchParams(query);
  if (path.startsWith("/job/")) {
    const escaped = path.slice("/job/".length);
    // A link typed or cut short ("%E0%A4%A") is not an id, and decoding it throws.
    let id;
    try {
      id = decodeURIComponent(escaped);
    } catch {
      params.set("link", escaped);
      return { view: badJobLink, params };
    }
    params.set("id", id);
    return { view: jobView, params };
  }
  if (path.startsWith("/queue/")) {
    try {
      params.set("queue", decodeURIComponent(path.slice("/queue/".length)));
    } catch {
      return { view: queuesView, params };
    }
    return { view: queueView, params };
  }
  if (path === "/jobs") return { view: jobsView, params };
  if (path === "/schedules") return { view: schedulesView, params };
  return { view: queuesView, params };
}

/** @type {View} */
function badJobLink(container, params) {
  const link = JSON.stringify(params.get("link") ?? "");
  container.append(
    h("h1", {}, "Not a valid job link"),
    errorNote(`${link} is not a job id: one of its % escapes is cut short or malformed (each % starts one such as %20 or %C3%A9). Was the link cut when it was copied?`),
    h("p", {}, "Find the job in ", h("a", { href: "#/jobs" }, "the list of jobs"), ", or open it by its id there."));
}

async function show() {
  leave.abort();
  leave = new AbortController();
  main.replaceChildren();
  // Whatever a view or its route throws ends here, on the page: never a page left as it was.
  try {
    const { view, params } = route();
    await view(main, params, leave.signal);
  } catch (error) {
    if (!leave.signal.aborted) main.append(errorNote(error));
  }
}

/**
 * The sign-in form: the token is tried on GET /v1/tokens/self, which any valid
 * token may read and which says what it may do, before it is kept.
 * @param {string} [why] what went wrong before, if anything
 */
function signIn(why) {
  leave.abort();
  window.removeEventListener("hashchange", show);
  session.replaceChildren();
  const input = h("input", { type: "password", name: "token", id: "token", required: true, autocomplete: "off", spellcheck: "false" });
  const note = h("div", { class: "note" }, why ? errorNote(why) : null);
  const form = h("form", { class: "sign-in", onsubmit: submit },
    h("h1", {}, "Sign in"),
    h("p", {}, "This server wants a bearer token: one of its FENCELEASE_TOKENS. The page keeps it in this tab only (sessionStorage) and sends it only to this server."),
    h("label", { for: "token" }, "Token"),
    input,
    h("button", { type: "submit" }, "Sign in"),
    note);
  main.replaceChildren(form);
  input.focus();

  /** @param {SubmitEvent} event */
  async function submit(event) {
    event.preventDefault();
    const given = input.value.trim();
    let grant;
    try {
      grant = await api("/v1/tokens/self", { bearer: given, quiet401: true });
    } catch (error) {
      const refused = error instanceof ApiError && error.status === 401;
      note.replaceChildren(errorNote(refused ? `That token was refused: ${error}` : error));
      return;
    }
    token.set(given);
    signedIn("token", grant);
  }
}

/**
 * @param {"token" | "open"} how
 * @param {import("./permit.js").Grant} grant what the token may do
 */
function signedIn(how, grant) {
  signedInAs(grant, how === "open");
  session.replaceChildren(how === "open"
    ? h("span", { class: "badge muted", title: "FENCELEASE_AUTH=off: no token, and only this machine may call" }, "auth off")
    : h("span", { class: "signed-in" },
      h("span", { class: "role", id: "signed-in-as", title: "What this token may do; the server refuses anything else" }, scope()),
      h("button", { type: "button", class: "secondary", onclick: () => { token.clear(); signIn(); } }, "Sign out")));
  window.addEventListener("hashchange", show);
  void show();
}

async function start() {
  whenUnauthorized((error) => {
    token.clear();
    signIn(`Signed out: ${error}`);
  });
  try {
    // With auth off the API answers without a token, and the page opens directly.
    const grant = await api("/v1/tokens/self", { quiet401: true });
    signedIn(token.get() ? "token" : "open", grant);
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 401)) return void main.replaceChildren(errorNote(error));
    const hadToken = token.get() !== null;
    token.clear();
    signIn(hadToken ? `The token of this tab is no longer accepted: ${error}` : undefined);
  }
}

void start();
