import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { onTestFinished } from "vitest";

/** A request a test endpoint received: its headers and body as sent, and when (performance.now()). */
export type Received = { headers: IncomingHttpHeaders; body: string; at: number };

/** How a test endpoint answers one request; it may wait, or never answer. */
export type Answer = (request: Received, response: ServerResponse) => void | Promise<void>;

/** A real HTTP endpoint on 127.0.0.1, for deliveries to reach: what it received, and its URL. */
export type Endpoint = { url: string; received: Received[]; close: () => Promise<void> };

/**
 * startEndpoint serves `answer` on a free port of 127.0.0.1 until the test
 * ends (its connections cut then, an answer never sent included).
 */
export async function startEndpoint(answer: Answer): Promise<Endpoint> {
  const received: Received[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const got = { headers: request.headers, body: Buffer.concat(chunks).toString("utf8"), at: performance.now() };
      received.push(got);
      void answer(got, response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const close = () => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  };
  onTestFinished(close);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/push`, received, close };
}

/** Answers `status` with `body` (JSON when not a string) and these headers, after `delayMs`. */
export function answerWith(status: number, body: unknown = "", headers: Record<string, string> = {}, delayMs = 0): Answer {
  return async (_request, response) => {
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    const text = typeof body === "string" ? body : JSON.stringify(body);
    response.writeHead(status, { "content-type": typeof body === "string" ? "text/plain" : "application/json", ...headers });
    response.end(text);
  };
}

/** Never answers: the request hangs until the sender gives up. */
export const neverAnswer: Answer = () => {};
