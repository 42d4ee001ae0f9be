// @ts-check
// The dashboard's one way to the server: the public API on this origin, with the
// bearer token of this tab. The token is kept in sessionStorage only, so it goes
// when the tab closes and no other tab or site sees it.

const TOKEN_KEY = "fencelease.token";

/** The token of this tab, if the person gave one. */
export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY),
  /** @param {string} value */
  set: (value) => sessionStorage.setItem(TOKEN_KEY, value),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

/** A refusal of the API, with the status, code and message the server gave. */
export class ApiError extends Error {
  /**
   * @param {number} status 0 when the server did not answer
   * @param {string} code
   * @param {string} message
   * @param {Record<string, unknown>} [details]
   */
  constructor(status, code, message, details) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }

  /** The message as the page shows it: the server's words, then the status and code. */
  toString() {
    return this.status === 0 ? this.message : `${this.message} (${this.status} ${this.code})`;
  }
}

/** @type {(error: ApiError) => void} */
let onUnauthorized = () => {};

/**
 * What to do when a call answers 401 after sign-in: the token was rotated away.
 * @param {(error: ApiError) => void} handler
 */
export function whenUnauthorized(handler) {
  onUnauthorized = handler;
}

/**
 * Calls the API and answers its JSON body, or throws ApiError with the server's message.
 * @param {string} path such as "/v1/stats"
 * @param {{ method?: string, body?: unknown, bearer?: string | null, quiet401?: boolean }} [options]
 *   body: sent as JSON; bearer: the token to send (default this tab's); quiet401: a 401 is only thrown, as at sign-in
 * @returns {Promise<any>}
 */
export async function api(path, { method = "GET", body, bearer = token.get(), quiet401 = false } = {}) {
  /** @type {Record<string, string>} */
  const headers = { Accept: "application/json" };
  if (bearer) headers.Authorization = `Bearer ${bearer}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    // Relative to the page (…/ui), so that the API is found beside it under any path a proxy serves it at.
    response = await fetch(path.replace(/^\//, ""), { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch {
    throw new ApiError(0, "unreachable", "the server did not answer: is it running?");
  }
  // 204 (a delete) has no body: null, as for any answer that is not JSON.
  const answer = await response.json().catch(() => null);
  if (response.ok) return answer;
  const error = new ApiError(response.status, answer?.error?.code ?? "error", answer?.error?.message ?? response.statusText, answer?.error?.details);
  if (response.status === 401 && !quiet401) onUnauthorized(error);
  throw error;
}

/** @param {string} id */
export const jobPath = (id) => `/v1/jobs/${encodeURIComponent(id)}`;

/** @param {string} queue */
export const queuePath = (queue) => `/v1/queues/${encodeURIComponent(queue)}`;
