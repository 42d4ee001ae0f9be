import { Hono } from "hono";
import { ApiError } from "./api-error.ts";

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
 * data they show comes from the API, with the token the person gives.
 */
export function uiRoutes(files: UiFiles): Hono {
  const app = new Hono();
  app.get("/ui", () => page(files, "index.html"));
  app.get("/docs", () => page(files, "docs.html"));
  app.get("/ui/*", (c) => {
    const name = new URL(c.req.url).pathname.slice("/ui/".length);
    if (!FILE_NAME.test(name)) throw noFile(name);
    return page(files, name);
  });
  return app;
}

async function page(files: UiFiles, name: string): Promise<Response> {
  const file = await files(name);
  if (!file || !file.ok) throw noFile(name);
  // A fresh Response: the one the Worker's assets binding answers has immutable headers.
  const headers = new Headers(file.headers);
  headers.set("Content-Security-Policy", UI_CSP);
  headers.set("X-Content-Type-Options", "nosniff");
  headers.set("Referrer-Policy", "no-referrer");
  // Revalidated on every load, so a page and its scripts never come from two versions.
  headers.set("Cache-Control", "no-cache");
  return new Response(file.body, { status: 200, headers });
}

function noFile(name: string): ApiError {
  return new ApiError(404, "route_not_found", `no file ${JSON.stringify(name)} in the dashboard`);
}
