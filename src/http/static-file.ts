// A file the app serves as it is to anyone (the dashboard's files, swagger-ui,
// the OpenAPI document), held in memory from its first request on: a request
// for it costs no disk read, no hashing and no compression, only the choice of
// which bytes to send. Anonymous loops over these open routes must not cost
// the server more than the refused API calls beside them.

/**
 * A file held in memory: its bytes, gzipped when that saves something, and a
 * strong ETag for each. The bytes are Blobs: immutable, so every answer can
 * share them, where a Response of a Uint8Array copies it each time.
 */
export type StaticFile = {
  type: string;
  body: Blob;
  etag: string;
  gzip?: { body: Blob; etag: string };
};

/** Types worth compressing: text. An image is compressed already. */
const COMPRESSIBLE = /^(?:text\/|application\/json|image\/svg\+xml)/;

/** Below this share of the original, gzip is not worth a second representation. */
const WORTH = 0.9;

/** Holds `bytes` as a file of this Content-Type: hashed for its ETag, and gzipped (by CompressionStream, on Node and Workers alike) when that saves something. */
export async function staticFile(bytes: Uint8Array, type: string): Promise<StaticFile> {
  const body = new Uint8Array(bytes);
  const tag = await digest(body);
  const file: StaticFile = { type, body: new Blob([body]), etag: `"${tag}"` };
  if (COMPRESSIBLE.test(type)) {
    const gzipped = await gzip(body);
    if (gzipped.byteLength < body.byteLength * WORTH) file.gzip = { body: new Blob([gzipped]), etag: `"${tag}-gzip"` };
  }
  return file;
}

/**
 * The answer to a GET of `file`: 304 when If-None-Match names either of its
 * ETags, else 200 with the gzipped bytes when the client accepts gzip and there
 * are some, else the bytes as they are. `headers` go on both.
 */
export function serveFile(request: Request, file: StaticFile, headers: Record<string, string> = {}): Response {
  const zipped = file.gzip && acceptsGzip(request.headers.get("Accept-Encoding")) ? file.gzip : undefined;
  const chosen = zipped ?? file;
  const answer = new Headers(headers);
  answer.set("ETag", chosen.etag);
  answer.set("Vary", "Accept-Encoding");
  const known = request.headers.get("If-None-Match");
  if (known !== null && matches(known, [file.etag, file.gzip?.etag])) return new Response(null, { status: 304, headers: answer });
  answer.set("Content-Type", file.type);
  answer.set("Content-Length", String(chosen.body.size));
  if (zipped) answer.set("Content-Encoding", "gzip");
  // On Workers, "manual" says the body is encoded already: the runtime would otherwise gzip it a second time. Node ignores it.
  return new Response(chosen.body, { status: 200, headers: answer, encodeBody: "manual" } as ResponseInit);
}

/** Whether an If-None-Match names one of `etags` (by the weak comparison that header uses), or is "*". */
function matches(header: string, etags: (string | undefined)[]): boolean {
  if (header.trim() === "*") return true;
  return header.split(",").some((listed) => etags.includes(listed.trim().replace(/^W\//, "")));
}

/** Whether an Accept-Encoding takes gzip: listed (or "*") with a q above 0. */
function acceptsGzip(header: string | null): boolean {
  if (header === null) return false;
  return header.split(",").some((entry) => {
    const [coding, ...params] = entry.split(";").map((part) => part.trim().toLowerCase());
    if (coding !== "gzip" && coding !== "x-gzip" && coding !== "*") return false;
    const q = params.find((param) => param.startsWith("q="));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

async function digest(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  // 128 bits of the hash, base64url: enough to tell two versions of a file apart.
  return btoa(String.fromCharCode(...hash.subarray(0, 16))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

async function gzip(bytes: Uint8Array<ArrayBuffer>): Promise<Uint8Array<ArrayBuffer>> {
  const stream = new Blob([bytes]).stream().pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}
