import { type LookupAddress, lookup as dnsLookup } from "node:dns";
import { Agent as HttpAgent, type IncomingMessage, request as httpRequest } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { BlockList, isIP, type LookupFunction } from "node:net";
import { Readable } from "node:stream";
import type { Post } from "../../push/deliver.ts";
import { InvalidArgument } from "../../store/errors.ts";

// Where the Node server's push deliveries may connect. A queue's endpoint is
// set by an admin of that queue, who may be scoped to a few queues (tokens):
// without this, such a token would have the server POST to, and record the
// answers of, anything the server's own network reaches (a database's HTTP
// port, a cloud's metadata service at 169.254.169.254). On the Worker, fetch
// cannot reach private ranges in the first place.

/** Whether push deliveries may go to addresses that are not public (FENCELEASE_PUSH_PRIVATE): loopback, private, link-local and the like. */
export type PrivateAddresses = "allow" | "deny";

/**
 * The address ranges that are not globally reachable (the IANA special-purpose
 * address registries, with multicast), by the name a refusal gives them.
 * An IPv4 range also holds its IPv4-mapped IPv6 addresses (::ffff:a.b.c.d).
 * 6to4 (2002::/16) is refused whole: it is deprecated (RFC 7526), no resolver
 * makes such addresses up, and where it still runs, the relay that carries a
 * delivery is not ours to trust, so nothing legitimate is lost. NAT64 is not
 * here: see NAT64 below.
 */
const RANGES: Record<string, [string, number, "ipv4" | "ipv6"][]> = {
  loopback: [["127.0.0.0", 8, "ipv4"], ["::1", 128, "ipv6"]],
  unspecified: [["0.0.0.0", 8, "ipv4"], ["::", 128, "ipv6"]],
  private: [["10.0.0.0", 8, "ipv4"], ["172.16.0.0", 12, "ipv4"], ["192.168.0.0", 16, "ipv4"], ["fc00::", 7, "ipv6"], ["fec0::", 10, "ipv6"]],
  "shared (carrier-grade NAT)": [["100.64.0.0", 10, "ipv4"]],
  "link-local": [["169.254.0.0", 16, "ipv4"], ["fe80::", 10, "ipv6"]],
  reserved: [
    ["::", 96, "ipv6"], ["192.0.0.0", 24, "ipv4"], ["192.0.2.0", 24, "ipv4"], ["192.88.99.0", 24, "ipv4"], ["198.18.0.0", 15, "ipv4"], ["198.51.100.0", 24, "ipv4"],
    ["203.0.113.0", 24, "ipv4"], ["240.0.0.0", 4, "ipv4"], ["64:ff9b:1::", 48, "ipv6"], ["100::", 64, "ipv6"], ["2001::", 23, "ipv6"],
    ["2001:db8::", 32, "ipv6"], ["3fff::", 20, "ipv6"], ["5f00::", 16, "ipv6"],
  ],
  multicast: [["224.0.0.0", 4, "ipv4"], ["ff00::", 8, "ipv6"]],
  "6to4": [["2002::", 16, "ipv6"]],
};

/**
 * NAT64's well-known prefix (RFC 6052): a gateway takes 64:ff9b::a.b.c.d to
 * the IPv4 address a.b.c.d, whatever it is. It is not refused whole: on a
 * network with only IPv6, DNS64 answers every IPv4-only endpoint with such
 * an address, and each would be refused. The IPv4 address it carries is
 * checked instead, as if it had been given (64:ff9b::127.0.0.1 is loopback).
 * The local-use prefix 64:ff9b:1::/48 (RFC 8215) maps as each network
 * decides, so nothing can be checked in it: it is refused whole (reserved).
 */
const NAT64 = new BlockList();
NAT64.addSubnet("64:ff9b::", 96, "ipv6");

const LISTS = Object.entries(RANGES).map(([name, subnets]) => {
  const list = new BlockList();
  for (const [address, prefix, family] of subnets) list.addSubnet(address, prefix, family);
  return [name, list] as const;
});

/** The name of the range that holds `address` (an IP address) when it is not public ("loopback", "private", "link-local"...); null for a public address or one that is no IP address. */
export function privateRange(address: string): string | null {
  const family = isIP(address);
  if (family === 0) return null;
  if (family === 6 && NAT64.check(address, "ipv6")) {
    const mapped = privateRange(lastIPv4(address));
    return mapped === null ? null : `NAT64-mapped ${mapped}`;
  }
  for (const [name, list] of LISTS) if (list.check(address, family === 4 ? "ipv4" : "ipv6")) return name;
  return null;
}

/** The IPv4 address in the last 32 bits of an IPv6 address (without a zone). */
function lastIPv4(address: string): string {
  // The URL parser writes the address in hexadecimal groups, with "::" at most once.
  const [head = "", tail = ""] = new URL(`http://[${address.split("%")[0]}]/`).hostname.slice(1, -1).split("::");
  const groups = [head, tail].map((part) => part.split(":").filter((group) => group !== ""));
  const all = [...groups[0]!, ...Array<string>(8 - groups[0]!.length - groups[1]!.length).fill("0"), ...groups[1]!].map((group) => Number.parseInt(group, 16));
  return [all[6]! >> 8, all[6]! & 0xff, all[7]! >> 8, all[7]! & 0xff].join(".");
}

/** A URL's host as an address or name: an IPv6 literal without its brackets. */
function hostOf(url: URL): string {
  return url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
}

/** The refusal of a delivery to `address` (what `host` is, or resolved to), as a connection error says it. */
function refused(host: string, address: string, range: string): Error {
  const what = host === address ? `${address} is` : `${host} resolves to ${address},`;
  return new Error(`${what} a ${range} address, which this server does not push to (FENCELEASE_PUSH_PRIVATE=deny)`);
}

/** Resolves a name to all its addresses, as dns.lookup with `all` does (which it is, but in tests). */
export type Resolve = (hostname: string, options: { all: true; family?: number; hints?: number }, callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) => void;

const systemResolve: Resolve = (hostname, options, callback) => dnsLookup(hostname, options, callback);

/**
 * The lookup a delivery's connection resolves its host with; with `deny`, it
 * refuses a name any of whose addresses is not public. As the connection
 * itself resolves with it, the address checked is the one connected to: a
 * name that resolved to a public address when the endpoint was put, and to
 * a private one now (DNS rebinding), is refused.
 */
function lookupWith(resolve: Resolve, deny: boolean): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { family: options.family as number | undefined, hints: options.hints, all: true }, (error, addresses) => {
      if (error) return callback(error, "", 0);
      for (const { address } of deny ? addresses : []) {
        const range = privateRange(address);
        if (range !== null) return callback(refused(hostname, address, range), "", 0);
      }
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

/** An answer of node:http as fetch answers it: the status and headers now, the body as a stream. */
function responseOf(answer: IncomingMessage): Response {
  const status = answer.statusCode ?? 0;
  const headers = new Headers();
  for (let i = 0; i + 1 < answer.rawHeaders.length; i += 2) headers.append(answer.rawHeaders[i]!, answer.rawHeaders[i + 1]!);
  const bodiless = status === 204 || status === 205 || status === 304;
  if (bodiless) answer.resume();
  return new Response(bodiless ? null : (Readable.toWeb(answer) as unknown as ReadableStream<Uint8Array>), { status, headers });
}

/**
 * pushNetwork is how the Node server's deliveries go out, and which endpoint
 * URLs it takes, by `privateAddresses`:
 * - `post` POSTs with node:http(s), following no redirect; with "deny", to
 *   public addresses only, checked where the connection is made: an IP
 *   literal before it, a name by the lookup the connection itself uses
 *   (`resolve`, dns.lookup but in tests). A refused delivery fails as an
 *   unreachable endpoint, saying why.
 * - `checkUrl` refuses, with "deny", an endpoint URL whose host is an IP
 *   literal that is not public, or localhost (InvalidArgument, before the put
 *   writes anything). A name is not resolved then: what it resolves to at each
 *   delivery is what counts.
 * - `close` ends the connections kept alive between deliveries.
 */
export function pushNetwork(privateAddresses: PrivateAddresses, resolve: Resolve = systemResolve): { post: Post; checkUrl(url: string): void; close(): void } {
  const deny = privateAddresses === "deny";
  const lookup = lookupWith(resolve, deny);
  const agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };
  return {
    post(url, { headers, body, signal }) {
      const target = new URL(url);
      const host = hostOf(target);
      const range = deny ? privateRange(host) : null;
      if (range !== null) return Promise.reject(new TypeError("fetch failed", { cause: refused(host, host, range) }));
      const https = target.protocol === "https:";
      return new Promise((resolve, reject) => {
        const failed = (error: unknown) => reject(new TypeError("fetch failed", { cause: error }));
        const sending = (https ? httpsRequest : httpRequest)(target, {
          method: "POST",
          headers: { ...headers, "content-length": String(Buffer.byteLength(body)) },
          agent: https ? agents.https : agents.http,
          lookup,
          signal,
        }, (answer) => {
          try {
            resolve(responseOf(answer));
          } catch (error) {
            answer.destroy();
            failed(error); // a status fetch would not take (below 200, above 599)
          }
        });
        sending.on("error", failed);
        sending.end(body);
      });
    },
    checkUrl(url) {
      if (!deny) return;
      let host: string;
      try {
        host = hostOf(new URL(url));
      } catch {
        return; // not a URL: the store's check says so
      }
      const range = isIP(host) ? privateRange(host) : /(^|\.)localhost\.?$/i.test(host) ? "loopback" : null;
      if (range === null) return;
      throw new InvalidArgument(
        `url ${JSON.stringify(url)} points to a ${range} address, which this server does not push to (FENCELEASE_PUSH_PRIVATE=deny): ` +
          "give the endpoint's public address, or start the server with FENCELEASE_PUSH_PRIVATE=allow to push within its own network",
      );
    },
    /** Closes the connections kept open for the next deliveries. */
    close() {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}
