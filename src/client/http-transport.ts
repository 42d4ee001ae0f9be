import { errorFromResponse, UnavailableError } from "./errors.ts";
import { delayBefore, neverSent, type RetryOptions, type RetryPolicy, retryPolicy } from "./retry.ts";
import { type Answer, type Send, sendWithFetch, sendWithNodeHttp } from "./send.ts";
import { addTraceHeaders } from "./tracing.ts";
import type { Call, Transport } from "./transport.ts";

/** Where the server is and how to reach it: a LeaseClient over HTTP. */
export type HttpOptions = {
  /** The server, e.g. `http://127.0.0.1:8787` or `https://fencelease.example.workers.dev`. */
  baseUrl: string;
  /** A bearer token from the server's FENCELEASE_TOKENS; none for a server with auth off. */
  token?: string | undefined;
  /** The fetch to use; default node:http with keep-alive where the runtime has it (Node, Bun, Deno), else the global fetch (Workers, browsers). */
  fetch?: typeof fetch | undefined;
  /** How often, and after how long, a call that could not be served is sent again: see Repeat for which calls may be. */
  retry?: RetryOptions | undefined;
  /** How long one attempt may wait for its answer before it counts as a broken connection; default 30 s. */
  timeoutMs?: number | undefined;
};

/** The `details.outcome` of an error answer, if it has one. */
function outcomeOf(answer: unknown): unknown {
  return (answer as { error?: { details?: { outcome?: unknown } } } | undefined)?.error?.details?.outcome;
}

/**
 * HttpTransport sends the client's calls to a server, each as its route: one
 * request at a time per call, with the token and the active span's
 * traceparent, a timeout per attempt, and the retries its Repeat allows
 * (capped exponential backoff with full jitter, or the server's Retry-After).
 * It answers the route's JSON as it is; a refusal throws its typed error.
 */
export class HttpTransport implements Transport {
  readonly #baseUrl: string;
  readonly #token: string | undefined;
  readonly #send: Send;
  readonly #retry: RetryPolicy;
  readonly #timeoutMs: number;

  constructor(options: HttpOptions) {
    this.#baseUrl = checkedBaseUrl(options.baseUrl).replace(/\/+$/, "");
    this.#token = options.token;
    const given = options.fetch;
    this.#send = given ? sendWithFetch(given) : (sendWithNodeHttp() ?? sendWithFetch((input, init) => fetch(input, init)));
    this.#retry = retryPolicy(options.retry);
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    if (!Number.isSafeInteger(this.#timeoutMs) || this.#timeoutMs < 1) throw new RangeError(`timeoutMs must be a positive whole number of ms, got ${options.timeoutMs}`);
  }

  /** Sends one call as its route, retrying what may be retried, and answers its JSON (undefined for an empty body) or throws its typed error. */
  async call<T>({ route: [method, path, body], repeat, options = {} }: Call<T>): Promise<T> {
    const headers: Record<string, string> = {};
    if (this.#token) headers.Authorization = `Bearer ${this.#token}`;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    addTraceHeaders(headers);
    const text = body === undefined ? undefined : JSON.stringify(body);

    for (let attempt = 0; ; attempt++) {
      const retriesLeft = attempt < this.#retry.retries;
      let response: Answer;
      try {
        // A server that never answers is a broken connection: the outcome of the call is unknown.
        // A long poll may be answered only after its waitMs: it gets that much more.
        const timeout = AbortSignal.timeout(this.#timeoutMs + (options.waitMs ?? 0));
        response = await this.#send(`${this.#baseUrl}${path}`, { method, headers, body: text, signal: options.signal ? AbortSignal.any([timeout, options.signal]) : timeout });
      } catch (error) {
        options.signal?.throwIfAborted(); // given up by the caller: not a failure to retry
        if (retriesLeft && (repeat === "always" || neverSent(error))) {
          await this.#retry.sleep(delayBefore(attempt, this.#retry, null));
          continue;
        }
        throw new UnavailableError(0, "unreachable", `could not reach ${this.#baseUrl}: ${(error as Error).message}`, undefined, { cause: error });
      }
      const answer = parsedOrUndefined(response.body);
      // A 503 whose details say "not_applied" wrote nothing, so any call may be sent again; one whose
      // outcome is unknown (the database's connection broke) only a call that is safe to repeat.
      if (response.status === 503 && retriesLeft && (repeat === "always" || outcomeOf(answer) === "not_applied")) {
        await this.#retry.sleep(delayBefore(attempt, this.#retry, response.header("Retry-After")));
        continue;
      }
      if (response.status < 200 || response.status > 299) throw errorFromResponse(response.status, answer);
      return answer as T;
    }
  }
}

/**
 * The base URL as given, once it is an absolute http: or https: URL: one
 * without its scheme ("127.0.0.1:8787", "localhost:8787") would otherwise make
 * every call fail, and only after its retries.
 */
export function checkedBaseUrl(baseUrl: unknown): string {
  let protocol: string | undefined;
  try {
    protocol = new URL(String(baseUrl)).protocol.toLowerCase();
  } catch {
    // not a URL at all: said below
  }
  if (typeof baseUrl === "string" && (protocol === "http:" || protocol === "https:")) return baseUrl;
  const hint = typeof baseUrl === "string" && /^[\w.-]+(:\d+)?(\/|$)/.test(baseUrl) ? `; did you mean http://${baseUrl}?` : "";
  throw new TypeError(`baseUrl must be an absolute http:// or https:// URL, such as http://127.0.0.1:8787, got ${JSON.stringify(baseUrl)}${hint}`);
}

/** A body's JSON, or undefined when it is empty or not JSON (an answer from something other than fencelease). */
function parsedOrUndefined(body: string): unknown {
  try {
    return body === "" ? undefined : JSON.parse(body);
  } catch {
    return undefined;
  }
}

/** `?name=value&...` of the parameters given, or "" when none is. */
export function queryString(parameters: Record<string, string | number | readonly string[] | undefined>): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(parameters)) {
    for (const each of value === undefined ? [] : Array.isArray(value) ? value : [value]) query.append(name, String(each)); // a list: the parameter repeated
  }
  const text = query.toString();
  return text === "" ? "" : `?${text}`;
}
