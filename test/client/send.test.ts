import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { type AddressInfo, createServer as createTcpServer, type Socket } from "node:net";
import { describe, expect, onTestFinished, test } from "vitest";
import { LeaseClient, UnavailableError } from "../../src/client/index.ts";

/** A plain HTTP server on a free port, answering with `answer`; counts the connections it accepted. */
async function listening(answer: (request: IncomingMessage, response: ServerResponse) => void) {
  const server = createServer(answer);
  const sockets = new Set<Socket>();
  server.on("connection", (socket) => sockets.add(socket));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  onTestFinished(() => {
    server.closeAllConnections();
    server.close();
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, connections: () => sockets.size };
}

const JOB = { id: "job-1", queue: "default", status: "queued" };

/** The two ways the client sends: its default on Node (node:http), and a fetch given. */
const transports: [string, (baseUrl: string) => LeaseClient][] = [
  ["node:http, the default on Node", (baseUrl) => new LeaseClient({ baseUrl, retry: { retries: 0 } })],
  ["a fetch given", (baseUrl) => new LeaseClient({ baseUrl, fetch: (input, init) => fetch(input, init), retry: { retries: 0 } })],
];

describe.each(transports)("the client's transport: %s", (_, clientOf) => {
  test("an answer whose body is cut before its end is a broken connection, never a result", async () => {
    const server = await listening((_, response) => {
      response.writeHead(200, { "Content-Type": "application/json", "Content-Length": "500" });
      response.write(JSON.stringify(JOB).slice(0, 10));
      setImmediate(() => response.socket?.destroy());
    });
    const error = await clientOf(server.url).get("job-1").catch((error) => error);
    expect(error).toBeInstanceOf(UnavailableError);
    expect(error).toMatchObject({ code: "unreachable" });
  });

  test("answers the route's JSON, with the headers the server reads, and a refusal as its typed error", async () => {
    const seen: (string | undefined)[][] = [];
    const server = await listening((request, response) => {
      let body = "";
      request.on("data", (chunk) => (body += chunk));
      request.on("end", () => {
        seen.push([request.method, request.url, request.headers.authorization, request.headers["content-type"], body]);
        const found = request.url === "/v1/jobs/job-1";
        response.writeHead(found ? 200 : 404, { "Content-Type": "application/json" });
        response.end(JSON.stringify(found ? JOB : { error: { code: "not_found", message: "no job job-2" } }));
      });
    });
    const client = clientOf(server.url);
    expect(await client.get("job-1")).toEqual(JOB);
    expect(await client.get("job-2").catch((error) => error)).toMatchObject({ name: "NotFoundError", code: "not_found" });
    const withToken = new LeaseClient({ baseUrl: server.url, token: "t0ken" });
    await withToken.enqueue({ id: "job-1", payload: { n: "é" } }).catch(() => undefined);
    expect(seen).toEqual([
      ["GET", "/v1/jobs/job-1", undefined, undefined, ""],
      ["GET", "/v1/jobs/job-2", undefined, undefined, ""],
      ["POST", "/v1/jobs", "Bearer t0ken", "application/json", JSON.stringify({ id: "job-1", payload: { n: "é" } })],
    ]);
  });
});

test("the default transport on Node keeps its connections alive, for every client of the process: twenty calls of two clients, one connection", async () => {
  const server = await listening((_, response) => {
    response.writeHead(200, { "Content-Type": "application/json" });
    response.end(JSON.stringify(JOB));
  });
  const [one, two] = [new LeaseClient({ baseUrl: server.url }), new LeaseClient({ baseUrl: server.url })];
  for (let i = 0; i < 10; i++) {
    expect(await one.get("job-1")).toEqual(JOB);
    expect(await two.get("job-1")).toEqual(JOB);
  }
  expect(server.connections()).toBe(1);
});

test("a base URL written HTTPS:// in capitals is spoken to over TLS, as fetch does", async () => {
  const firstBytes: number[] = [];
  const tcp = createTcpServer((socket) => socket.once("data", (data) => {
    firstBytes.push(data[0]!);
    socket.destroy(); // no TLS here: the client's call fails, after it began a TLS handshake
  }));
  await new Promise<void>((resolve) => tcp.listen(0, "127.0.0.1", resolve));
  onTestFinished(() => void tcp.close());
  const client = new LeaseClient({ baseUrl: `HTTPS://127.0.0.1:${(tcp.address() as AddressInfo).port}`, retry: { retries: 0 } });
  expect(await client.get("job-1").catch((error) => error)).toMatchObject({ name: "UnavailableError", code: "unreachable" });
  expect(firstBytes).toEqual([0x16]); // a TLS record: handshake
});
