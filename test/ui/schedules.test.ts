import { describe, expect, test } from "vitest";
import { browserAndServer, fitsWidth, leave, signIn, visit, WAIT } from "./browser.ts";

// The schedules page in Chromium against a real Node server (its clock stands
// still, so nothing fires while the test runs): the list with each next fire,
// the form that puts a schedule, and Delete; each checked in the server's state.

const shared = browserAndServer();

describe("schedules", () => {
  test.each([1280, 390])("at %i px: the list shows each schedule's next fire; the form creates one; Delete asks, then deletes it", async (width) => {
    const { server } = shared;
    const nightly = `nightly-${width}`;
    const tick = `tick-${width}`;
    await server.call("PUT", `/v1/schedules/${nightly}`, { queue: "reports", cron: "0 3 * * *", timezone: "Europe/Paris" });
    const visited = await visit(shared.browser, width);
    const { page } = visited;
    await signIn(page, server.url);
    await page.getByRole("link", { name: "Schedules" }).click();
    const row = (name: string) => page.locator(`tr[data-schedule="${name}"]`);
    await row(nightly).waitFor();
    expect(await row(nightly).locator("[data-field=cadence]").textContent()).toBe("0 3 * * * (Europe/Paris)");
    const stored = await server.call("GET", `/v1/schedules/${nightly}`);
    expect(await row(nightly).locator("[data-field=nextFireAt] time").getAttribute("datetime")).toBe(new Date(stored.nextFireAt).toISOString());
    expect(await row(nightly).locator("[data-field=lastFireAt]").textContent()).toBe("never yet");

    await page.getByLabel("Name").fill(tick);
    await page.getByLabel("Queue").fill("pings");
    await page.getByLabel("Every (ms)").fill("60000");
    await page.getByLabel("Payload (JSON)").fill('{"ping":true}');
    await page.getByRole("button", { name: "Save schedule" }).click();
    await row(tick).waitFor(WAIT);
    expect(await page.locator("#schedule-note").textContent()).toBe(`Saved schedule ${tick}.`);
    expect(await row(tick).locator("[data-field=cadence]").textContent()).toBe("every 60000 ms");
    expect(await server.call("GET", `/v1/schedules/${tick}`)).toMatchObject({ name: tick, queue: "pings", cron: null, everyMs: 60_000, payload: { ping: true } });
    expect(await fitsWidth(page)).toBe(true);

    await page.getByRole("button", { name: `Delete schedule ${tick}` }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Cancel" }).click();
    expect(await server.call("GET", `/v1/schedules/${tick}`)).toMatchObject({ name: tick }); // asked, and not deleted
    await page.getByRole("button", { name: `Delete schedule ${tick}` }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Delete schedule" }).click();
    await expect.poll(() => row(tick).count(), WAIT).toBe(0);
    expect(await server.call("GET", `/v1/schedules/${tick}`)).toMatchObject({ error: { code: "not_found" } });
    expect(await row(nightly).count()).toBe(1); // the other one stays
    await leave(visited, server.url);
  });

  test("a schedule the API refuses shows its message and code, a payload that is not JSON is named, and neither changes anything", async () => {
    const { server } = shared;
    const visited = await visit(shared.browser);
    const { page } = visited;
    await signIn(page, server.url);
    await page.goto(`${server.url}/ui#/schedules`);
    await page.getByRole("heading", { name: "Schedules" }).waitFor();
    const before = await server.call("GET", "/v1/schedules");
    await page.getByLabel("Name").fill("both");
    await page.getByLabel("Queue").fill("q");
    await page.getByLabel("Cron").fill("* * * * *");
    await page.getByLabel("Every (ms)").fill("60000");
    await page.getByRole("button", { name: "Save schedule" }).click();
    await expect.poll(() => page.getByRole("alert").textContent(), WAIT).toMatch(/\(400 invalid_request\)$/);

    await page.getByLabel("Every (ms)").fill("");
    await page.getByLabel("Payload (JSON)").fill("hello");
    await page.getByRole("button", { name: "Save schedule" }).click();
    await expect.poll(() => page.getByRole("alert").textContent(), WAIT).toBe('The payload is not JSON (a string needs quotes: "text"): hello');
    expect(await server.call("GET", "/v1/schedules")).toEqual(before);
    await leave(visited, server.url);
  });
});
