import type { LookupAddress } from "node:dns";
import { describe, expect, test } from "vitest";
import { privateRange, pushNetwork, type Resolve } from "../../src/runtime/node/push-network.ts";
import { InvalidArgument } from "../../src/store/errors.ts";
import { answerWith, startEndpoint } from "../push/endpoint.ts";

// Where the Node server's push deliveries may connect: with "deny", only to
// public addresses, checked where the connection is made; the endpoints are
// real HTTP servers on 127.0.0.1, reached through a name a test resolver
// answers, as a DNS that rebinds would.

/** A resolver that answers `addresses` for `name`, and what it was asked. */
function resolving(name: string, addresses: string[]): Resolve & { asked: string[] } {
  const asked: string[] = [];
  const resolve: Resolve = (hostname, _options, callback) => {
    asked.push(hostname);
    if (hostname !== name) return callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" }), []);
    callback(null, addresses.map((address): LookupAddress => ({ address, family: address.includes(":") ? 6 : 4 })));
  };
  return Object.assign(resolve, { asked });
}

const REQUEST = { headers: { "content-type": "application/json" }, body: "{}" };

describe("private addresses", () => {
  test("each range that is not public is named; public addresses and names are not", () => {
    const named: [string, string | null][] = [
      ["127.0.0.1", "loopback"], ["127.8.9.10", "loopback"], ["::1", "loopback"], ["::ffff:127.0.0.1", "loopback"], ["::ffff:7f00:1", "loopback"],
      ["0.0.0.0", "unspecified"], ["::", "unspecified"],
      ["10.1.2.3", "private"], ["172.16.0.1", "private"], ["172.31.255.255", "private"], ["192.168.1.1", "private"], ["fd12:3456::1", "private"], ["::ffff:10.0.0.1", "private"],
      ["100.64.0.1", "shared (carrier-grade NAT)"],
      ["169.254.169.254", "link-local"], ["fe80::1", "link-local"],
      ["192.0.2.1", "reserved"], ["198.18.0.1", "reserved"], ["255.255.255.255", "reserved"], ["2001:db8::1", "reserved"], ["::7f00:1", "reserved"],
      ["224.0.0.1", "multicast"], ["ff02::1", "multicast"],
      // NAT64 (64:ff9b::/96) reaches the IPv4 address it carries: that address decides. 6to4 is refused whole.
      ["64:ff9b::7f00:1", "NAT64-mapped loopback"], ["64:ff9b::127.0.0.1", "NAT64-mapped loopback"], ["64:ff9b::a9fe:a9fe", "NAT64-mapped link-local"],
      ["64:ff9b::a00:1", "NAT64-mapped private"], ["64:ff9b::", "NAT64-mapped unspecified"], ["64:ff9b:1::808:808", "reserved"],
      ["2002:7f00:1::1", "6to4"], ["2002:808:808::1", "6to4"], ["2002::", "6to4"],
      ["8.8.8.8", null], ["64:ff9b::1.1.1.1", null], ["172.32.0.1", null], ["100.128.0.1", null], ["1.1.1.1", null], ["2606:4700:4700::1111", null], ["64:ff9b::808:808", null],
      ["example.com", null], ["localhost", null],
    ];
    expect(named.map(([address]) => [address, privateRange(address)])).toEqual(named);
  });

  test("with deny, a put of a URL whose host is a private IP or localhost is refused, saying how to allow it; names and public IPs are taken", () => {
    const { checkUrl } = pushNetwork("deny");
    for (const url of ["http://127.0.0.1:8080/push", "http://2130706433/", "http://[::1]/", "http://[::ffff:127.0.0.1]/", "https://10.0.0.7/", "http://169.254.169.254/latest/meta-data/", "http://localhost:3000/", "http://api.localhost/", "http://[64:ff9b::a9fe:a9fe]/latest/meta-data/", "http://[2002:a9fe:a9fe::]/"]) {
      expect(() => checkUrl(url), url).toThrow(InvalidArgument);
    }
    expect(() => checkUrl("http://169.254.169.254/latest/")).toThrow(
      'url "http://169.254.169.254/latest/" points to a link-local address, which this server does not push to (FENCELEASE_PUSH_PRIVATE=deny): ' +
        "give the endpoint's public address, or start the server with FENCELEASE_PUSH_PRIVATE=allow to push within its own network",
    );
    for (const url of ["https://mail.example/push", "http://8.8.8.8/", "https://[2606:4700:4700::1111]/", "not a url"]) expect(() => checkUrl(url), url).not.toThrow();
    for (const url of ["http://127.0.0.1:8080/push", "http://localhost:3000/"]) expect(() => pushNetwork("allow").checkUrl(url)).not.toThrow();
  });

  test("with deny, a delivery is refused where it connects: to a private IP, and to a name that resolves to one, which nothing checked before", async () => {
    const endpoint = await startEndpoint(answerWith(200, { ok: true }));
    const port = new URL(endpoint.url).port;
    const rebound = resolving("endpoint.test", ["127.0.0.1"]);
    const { post, checkUrl } = pushNetwork("deny", rebound);
    const signal = new AbortController().signal;

    await expect(post(endpoint.url, { ...REQUEST, signal })).rejects.toMatchObject({
      cause: { message: "127.0.0.1 is a loopback address, which this server does not push to (FENCELEASE_PUSH_PRIVATE=deny)" },
    });
    const named = `http://endpoint.test:${port}/push`;
    expect(() => checkUrl(named)).not.toThrow(); // a name: what it resolves to at each delivery counts
    await expect(post(named, { ...REQUEST, signal })).rejects.toMatchObject({
      cause: { message: "endpoint.test resolves to 127.0.0.1, a loopback address, which this server does not push to (FENCELEASE_PUSH_PRIVATE=deny)" },
    });
    expect(rebound.asked).toEqual(["endpoint.test"]);
    // One private address among public ones is enough to refuse.
    const mixed = pushNetwork("deny", resolving("endpoint.test", ["93.184.215.14", "10.0.0.1"]));
    await expect(mixed.post(named, { ...REQUEST, signal })).rejects.toMatchObject({ cause: { message: expect.stringMatching(/^endpoint\.test resolves to 10\.0\.0\.1, a private address/) } });
    // So is a name that a DNS64 answers with the NAT64 address of a private one.
    const nat64 = pushNetwork("deny", resolving("endpoint.test", ["64:ff9b::a00:1"]));
    await expect(nat64.post(named, { ...REQUEST, signal })).rejects.toMatchObject({ cause: { message: expect.stringMatching(/^endpoint\.test resolves to 64:ff9b::a00:1, a NAT64-mapped private address/) } });
    expect(endpoint.received).toEqual([]);
  });

  test("with allow, the same name is delivered to the address its lookup answered: the address checked is the one connected to", async () => {
    const endpoint = await startEndpoint(answerWith(201, { ok: true }));
    const resolve = resolving("endpoint.test", ["127.0.0.1"]);
    const { post } = pushNetwork("allow", resolve);
    const response = await post(`http://endpoint.test:${new URL(endpoint.url).port}/push`, { ...REQUEST, signal: new AbortController().signal });
    expect(response.status).toBe(201);
    expect(await response.json()).toEqual({ ok: true });
    expect(resolve.asked).toEqual(["endpoint.test"]);
    expect(endpoint.received).toHaveLength(1);
    expect(endpoint.received[0]!.headers.host).toBe(`endpoint.test:${new URL(endpoint.url).port}`);
  });
});
