import { readFileSync } from "node:fs";

/** The package's version, from its package.json, one folder above src/ and dist/ alike. */
export const VERSION: string = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")).version;
