// @ts-check
// What the signed-in token may do, as GET /v1/tokens/self answers it: the page
// shows it beside Sign out, and offers only the buttons the token may press.
// The server decides every call (src/http/permit.ts); these are its rules,
// written again for the page, so that a button it would refuse is not shown.

/** @typedef {"admin" | "producer" | "worker" | "reader"} Role */
/** @typedef {{ id: string | null, name: string | null, role: Role, queues: string[] }} Grant */
/** @typedef {"read" | "enqueue" | "work" | "manage"} Action */

/** @type {Record<Action, Role[]>} */
const MAY = {
  read: ["reader", "producer", "worker", "admin"],
  enqueue: ["producer", "admin"],
  work: ["worker", "admin"],
  manage: ["admin"],
};

/** What each role does beyond reading its queues, in words. @type {Record<Role, string>} */
const DOES = {
  admin: "may do everything: pause, resume and set queues, retry, cancel and delete jobs, manage schedules",
  producer: "may enqueue jobs and read them; it changes nothing here",
  worker: "may claim jobs and renew, complete, fail or release its leases, and read them; it changes nothing here",
  reader: "may only read",
};

/** @type {Grant} */
let current = { id: null, name: null, role: "admin", queues: ["*"] };
/** With auth off there is no token: the page says so instead of what a token may do. */
let open = false;

/** The signed-in token, once the page has asked the server (`authOff`: no token, FENCELEASE_AUTH=off). @param {Grant} grant @param {boolean} [authOff] */
export function signedInAs(grant, authOff = false) {
  current = grant;
  open = authOff;
}

/** Whether the signed-in token covers `queue`: a name, a prefix ending in `*`, or `*`. @param {string} queue */
export function sees(queue) {
  return current.queues.some((pattern) => (pattern.endsWith("*") ? queue.startsWith(pattern.slice(0, -1)) : queue === pattern));
}

/** Whether the signed-in token may take `action` on `queue`. @param {Action} action @param {string} queue */
export function may(action, queue) {
  return MAY[action].includes(current.role) && sees(queue);
}

/** Whether the signed-in token's role may ever take `action` (on one of its queues). @param {Action} action */
export function mayAtAll(action) {
  return MAY[action].includes(current.role);
}

/** The token in a few words: "worker for invoices, mail-*". */
export function scope() {
  return `${current.role} for ${current.queues.includes("*") ? "every queue" : current.queues.join(", ")}`;
}

/** What the token may do, in a sentence. */
export function abilities() {
  if (open) return "Auth is off (FENCELEASE_AUTH=off): no token is asked, and this page may do everything, from this machine only.";
  const named = current.name === null ? "This token" : `This token (${current.name})`;
  const queues = current.queues.includes("*") ? "every queue" : `the queue${current.queues.length === 1 ? "" : "s"} ${current.queues.join(", ")}`;
  return `${named} is ${current.role === "admin" ? "an" : "a"} ${current.role} for ${queues}: it ${DOES[current.role]}.`;
}
