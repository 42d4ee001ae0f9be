import { once } from "node:events";
import { expect, test } from "vitest";
import { freshDir } from "../fresh-db.ts";
import { freePort, killGroup, listening, npm, until } from "./npm-process.ts";

// `npm run dev` as a user runs it (docs/deployment.md): the Worker in workerd,
// a first line that says which storage mode runs, and, in D1 mode, the cron's
// summary in the log when it is fired by hand.

test("npm run dev -- -c wrangler.objects.toml says it runs objects mode, migrates no D1, serves, and stops on a SIGTERM to npm", async () => {
  const port = await freePort();
  // Its objects keep their SQLite in a folder of this test's, not in the checkout's .wrangler/state.
  const dev = npm(["run", "dev", "--", "-c", "wrangler.objects.toml", "--port", String(port), "--persist-to", freshDir()], port);
  try {
    expect(await until(() => dev.output().stdout.includes("Ready on"), 150_000), JSON.stringify(dev.output())).toBe(true);
    const lines = dev.output().stdout.split("\n").filter((line) => line !== "" && !line.startsWith(">"));
    expect(lines[0]).toBe("objects mode (wrangler.objects.toml): each queue in its own Durable Object, kept in .wrangler/state; no D1");
    expect(`${dev.output().stdout}${dev.output().stderr}`).not.toMatch(/D1 \(|migrations applied/);
    const enqueued = await fetch(`http://127.0.0.1:${port}/v1/jobs`, { method: "POST", headers: { "Content-Type": "application/json" }, body: '{"id":"dev-1","queue":"dev"}' });
    expect(enqueued.status).toBe(201);
    const exited = once(dev, "exit");
    dev.kill("SIGTERM");
    await exited;
    expect(await until(async () => !(await listening(port)), 10_000)).toBe(true);
  } finally {
    killGroup(dev);
  }
}, 180_000);

test("npm run dev in D1 mode says so, and a cron fired by hand (/cdn-cgi/local/scheduled) is reported in its log, as docs/deployment.md says", async () => {
  const port = await freePort();
  const dev = npm(["run", "dev", "--", "--port", String(port)], port);
  try {
    expect(await until(() => dev.output().stdout.includes("Ready on"), 150_000), JSON.stringify(dev.output())).toBe(true);
    const lines = dev.output().stdout.split("\n").filter((line) => line !== "" && !line.startsWith(">"));
    expect(lines[0]).toMatch(/^D1 mode \(wrangler\.toml\): local D1 in \.wrangler\/state, (no|\d+) new migrations applied$/);
    const fired = await fetch(`http://127.0.0.1:${port}/cdn-cgi/local/scheduled`);
    expect([fired.status, await fired.text()]).toEqual([200, "ok"]);
    expect(await until(() => /fencelease: ended \d+ expired leases?, purged \d+ old jobs?/.test(dev.output().stdout), 10_000), dev.output().stdout).toBe(true);
    const exited = once(dev, "exit");
    dev.kill("SIGTERM");
    await exited;
  } finally {
    killGroup(dev);
  }
}, 180_000);
