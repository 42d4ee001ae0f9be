import { describe, expect, test } from "vitest";
import { answerWith, startEndpoint } from "../push/endpoint.ts";
import { browserAndServer, fitsWidth, leave, signIn, visit, WAIT } from "./browser.ts";

// A queue's push in the dashboard, in Chromium against a real Node server and
// a real endpoint on 127.0.0.1: the dialog that starts, rotates and stops it,
// the secret shown once, and each delivery in the job's history.

const shared = browserAndServer();

describe("push in the dashboard", () => {
  test("Push on a queue's row starts pushing it, shows the secret once, rotates it, and stops it after a confirmation", async () => {
    const { server } = shared;
    await server.call("POST", "/v1/queues/mailer/pause"); // its jobs stay where they are while the test looks
    await server.call("POST", "/v1/queues/mailer/jobs", { jobs: [{ id: "mailer-1" }] });
    const endpoint = await startEndpoint(answerWith(200));
    const visited = await visit(shared.browser, 390);
    const { page } = visited;
    await signIn(page, server.url);

    await page.getByRole("button", { name: "Push of queue mailer" }).click();
    const dialog = page.getByRole("dialog", { name: "Push of queue mailer" });
    await dialog.waitFor(WAIT);
    expect(await dialog.locator("p.muted").textContent()).toMatch(/^Not pushed: its jobs wait for workers/);
    await dialog.getByLabel("Endpoint URL").fill(endpoint.url);
    await dialog.getByLabel("At most at once").fill("3");
    await dialog.getByRole("button", { name: "Start pushing" }).click();
    const secret = dialog.getByLabel("Secret");
    await expect.poll(() => secret.inputValue(), WAIT).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const first = await secret.inputValue();
    expect(await dialog.locator("#push-secret-hint").textContent()).toBe("Shown this once: keep it where the endpoint reads it, and check each delivery with verifyPush (fencelease/client).");
    expect(await server.call("GET", "/v1/queues/mailer/push")).toMatchObject({ url: endpoint.url, maxInFlight: 3, timeoutMs: 10_000 });
    expect(await fitsWidth(page)).toBe(true);
    await dialog.getByRole("button", { name: "Close" }).click();
    const pushed = page.locator("tr[data-queue=mailer] [data-setting=push]");
    await expect.poll(() => pushed.textContent(), WAIT).toBe(`pushed to ${new URL(endpoint.url).host}, 3 at once`);

    await page.getByRole("button", { name: "Push of queue mailer" }).click();
    await dialog.waitFor(WAIT);
    expect(await dialog.getByLabel("Endpoint URL").inputValue()).toBe(endpoint.url);
    expect(await dialog.getByLabel("Secret").count()).toBe(0); // never read back
    await dialog.getByRole("button", { name: "Rotate secret" }).click();
    await expect.poll(() => dialog.getByLabel("Secret").inputValue(), WAIT).toMatch(/^whsec_/);
    expect(await dialog.getByLabel("Secret").inputValue()).not.toBe(first);
    expect(await server.call("GET", "/v1/queues/mailer/push")).toMatchObject({ rotating: true });

    await dialog.getByRole("button", { name: "Stop pushing" }).click();
    await page.getByRole("dialog", { name: "Stop pushing mailer?" }).getByRole("button", { name: "Stop pushing" }).click();
    await expect.poll(() => page.locator("#queue-note").textContent(), WAIT).toBe("Stopped pushing mailer: its jobs wait for workers.");
    expect(await server.call("GET", "/v1/queues/mailer/push")).toMatchObject({ error: { code: "not_found" } });
    await expect.poll(() => pushed.count(), WAIT).toBe(0);
    expect(endpoint.received).toEqual([]); // paused all along: nothing was delivered
    await leave(visited, server.url);
  });

  test("a refused endpoint is shown in the dialog, which stays open, and nothing is pushed", async () => {
    const { server } = shared;
    await server.call("POST", "/v1/queues/refused/jobs", { jobs: [{ id: "refused-1" }] });
    const visited = await visit(shared.browser);
    const { page } = visited;
    await signIn(page, server.url);
    await page.getByRole("button", { name: "Push of queue refused" }).click();
    const dialog = page.getByRole("dialog", { name: "Push of queue refused" });
    await dialog.getByLabel("Endpoint URL").fill("https://me:secret@mail.example/");
    await dialog.getByRole("button", { name: "Start pushing" }).click();
    await expect.poll(() => dialog.locator(".error").textContent(), WAIT).toBe("url must not hold a user name or password: each delivery is signed instead (see the secret) (400 invalid_request)");
    expect(await server.call("GET", "/v1/queues/refused/push")).toMatchObject({ error: { code: "not_found" } });
    await leave(visited, server.url);
  });

  test("each delivery is a step of its lease in the job's history: how the endpoint answered, and how long it took", async () => {
    const { server } = shared;
    let calls = 0;
    const endpoint = await startEndpoint((request, response) => (++calls === 1 ? answerWith(503, "busy", { "retry-after": "0" }) : answerWith(200, { sent: true }))(request, response));
    await server.call("PUT", "/v1/queues/notices/push", { url: endpoint.url });
    await server.call("POST", "/v1/jobs", { id: "notice-1", queue: "notices" });
    await expect.poll(async () => (await server.call("GET", "/v1/jobs/notice-1")).status, WAIT).toBe("done");
    const visited = await visit(shared.browser);
    const { page } = visited;
    await signIn(page, server.url);
    await page.goto(`${server.url}/ui#/job/notice-1`);
    await page.locator(".timeline").waitFor(WAIT);
    const steps = (fence: number) => page.locator(`li.generation[data-fence='${fence}'] .step`).allTextContents();
    expect(await steps(1)).toEqual([
      expect.stringMatching(/ claimed by push$/),
      expect.stringMatching(/ pushed in \d+ ms: the endpoint answered 503: busy$/),
      expect.stringMatching(/ failed: the endpoint answered 503: busy$/),
    ]);
    expect(await steps(2)).toEqual([
      expect.stringMatching(/ claimed by push$/),
      expect.stringMatching(/ pushed: the endpoint answered 200 in \d+ ms$/),
      expect.stringMatching(/ completed$/),
    ]);
    expect(await page.locator("li.generation[data-fence='1'] .step.pushed.failure").count()).toBe(1);
    await leave(visited, server.url);
  });
});
