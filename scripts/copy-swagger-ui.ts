// Copies the pinned swagger-ui-dist's files that /docs needs into src/ui/vendor/swagger-ui/,
// the Worker's static assets (one folder, so the copy). Run by `prepare`, that is by every
// `npm install` and `npm ci`, so the copy always matches the installed version. The Node
// server reads the same files straight from node_modules.
import { copyFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const FILES = ["swagger-ui-bundle.js", "swagger-ui.css", "LICENSE", "NOTICE"];

const from = dirname(fileURLToPath(import.meta.resolve("swagger-ui-dist/package.json")));
const to = fileURLToPath(new URL("../src/ui/vendor/swagger-ui/", import.meta.url));
mkdirSync(to, { recursive: true });
// A file already the same is left alone: `npm pack` runs this too, maybe while tests read the folder.
for (const file of FILES) {
  const target = join(to, file);
  if (!existsSync(target) || !readFileSync(target).equals(readFileSync(join(from, file)))) copyFileSync(join(from, file), target);
}
