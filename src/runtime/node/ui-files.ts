import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { UiFiles } from "../../http/ui.ts";

/** The dashboard's folder. From src/ and from the package's dist/ alike: both sit beside src/. */
export const UI_DIR = fileURLToPath(new URL("../../../src/ui/", import.meta.url));

/**
 * The pinned swagger-ui-dist package, whose files /docs serves as ui/vendor/swagger-ui/
 * (found with require.resolve: import.meta.resolve is missing from Node 20 before 20.6).
 */
const SWAGGER_UI_DIR = dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));
const VENDOR = "vendor/swagger-ui/";

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".png": "image/png",
  ".svg": "image/svg+xml",
};

/**
 * The dashboard's files as the Node server serves them: read from disk when
 * uiRoutes asks, once per file with tokens (it serves them from memory), on
 * every request with auth off (so an edit shows on the next reload, as under
 * `npm start`). swagger-ui's files come straight
 * from the installed package (the Worker gets a copy in src/ui/vendor/, made by
 * scripts/copy-swagger-ui.ts, since its assets are one folder). Names come
 * checked by uiRoutes (src/http/ui.ts): no ".." reaches this function.
 */
export function uiFilesFromDisk(dir = UI_DIR): UiFiles {
  return async function readUiFile(name) {
    const path = name.startsWith(VENDOR) ? join(SWAGGER_UI_DIR, name.slice(VENDOR.length)) : join(dir, name);
    const type = TYPES[extname(name)];
    if (type === undefined) return null;
    try {
      return new Response(await readFile(path), { headers: { "Content-Type": type } });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT" || (error as NodeJS.ErrnoException).code === "EISDIR") return null;
      throw error;
    }
  };
}
