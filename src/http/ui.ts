import { Hono } from "hono";
import { ApiError } from "./api-error.ts";
import { serveFile, type StaticFile, staticFile } from "./static-file.ts";

/**
 * Reads one file of the dashboard's folder, src/ui/, by its name there ("app.js",
 * "vendor/swagger-ui/swagger-ui.css"); null when there is no such file. The Node
 * server reads the folder from disk (src/runtime/node/ui-files.ts), the Worker from its static
 * assets (wrangler.toml's [assets]), so both serve the same files through the same
 * routes and headers.
 */
export type UiFiles = (name: string) => Promise<Response | null>;

/**
 * The policy of every page and file of /ui and /docs: only our own files run (no
 * inline script, no eval, no other origin), and data comes from the API on the
 * same origin. swagger-ui 5 needs nothing looser: it sets its styles through the
 * DOM, not in markup, and never evals (the browser tests fail on any violation).
 */
export const UI_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

// Path segments of letters, digits and dashes, a file name with a known extension:
// nothing else of the folder is served, and no ".." can be spelled.
const FILE_NAME = /^(?:[a-z0-9][a-z0-9-]*\/)*[a-z0-9][a-z0-9.-]*\.(?:html|js|css|png|svg)$/;

/**
 * Serves the dashboard at GET /ui (src/ui/index.html, then /ui/<file>) and the
 * API docs at GET /docs (src/ui/docs.html), with a strict Content-Security-Policy.
 * None needs a token: the pages are the same for everyone and hold no data; the
 * data they show comes from the API, with the token the person gives. Each file
 * is read once, on its first request, and then served from memory with its
 * ETag, gzipped to a client that takes it (see static-file.ts): a change to a
 * file shows after a restart. With `reread` (local development), each request
 * reads its file again, so that an edit shows on the next reload.
 */
export function uiRoutes(files: UiFiles, { reread = false }: { reread?: boolean } = {}): Hono {
  const held = heldFiles(files, reread);
  const app = new Hono();
  app.get("/ui", (c) => page(held, "index.html", c.req.raw));
  app.get("/docs", (c) => page(held, "docs.html", c.req.raw));
  app.get("/ui/*", (c) => {
    const name = new URL(c.req.url).pathname.slice("/ui/".length);
    if (!FILE_NAME.test(name)) throw noFile(name);
    return page(held, name, c.req.raw);
  });
  return app;
}

/** The headers of every file of /ui and /docs. */
const PAGE_HEADERS = {
  "Content-Security-Policy": UI_CSP,
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  // Revalidated on every load (a 304 while it has not changed), so a page and its scripts never come from two versions.
  "Cache-Control": "no-cache",
};

/**
 * The files as held in memory: the first request of a name reads it, and every
 * later one gets what that read. With `reread`, each request reads its file
 * again and gets the held copy while the bytes are the same: an edit shows on
 * the next reload, at the cost of a read.
 */
function heldFiles(files: UiFiles, reread: boolean): (name: string) => Promise<StaticFile | null> {
  const held = new Map<string, { bytes: Uint8Array; file: Promise<StaticFile> }>();
  return async function heldFile(name) {
    const known = held.get(name);
    if (known && !reread) return known.file;
    const read = await files(name);
    // Only files that exist are kept, so requests for made-up names cannot fill the memory.
    if (!read || !read.ok) {
      held.delete(name);
      return null;
    }
    const bytes = new Uint8Array(await read.arrayBuffer());
    const again = held.get(name); // another request may have read it meanwhile
    if (again && sameBytes(again.bytes, bytes)) return again.file;
    const file = staticFile(bytes, read.headers.get("Content-Type") ?? "application/octet-stream");
    held.set(name, { bytes, file });
    file.catch(() => held.delete(name));
    return file;
  };
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && a.every((byte, i) => byte === b[i]);
}

async function page(held: (name: string) => Promise<StaticFile | null>, name: string, request: Request): Promise<Response> {
  const file = await held(name);
  if (!file) throw noFile(name);
  return serveFile(request, file, PAGE_HEADERS);
}

function noFile(name: string): ApiError {
  return new ApiError(404, "route_not_found", `no file ${JSON.stringify(name)} in the dashboard`);
}
