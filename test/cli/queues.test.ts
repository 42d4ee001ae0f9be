import { describe, expect, test } from "vitest";
import { serving } from "./process.ts";
import { NO_KEY_LIMITS } from "../contract/queues.contract.ts";

// The queue commands (queues, queue, pause, resume) against a real server: what
// they print, in words and in JSON, and the settings they leave in the database.

describe("the queue commands", () => {
  test("queues lists every queue's settings; queue reads one, --max-leased sets it and none takes it away", async () => {
    await using s = await serving();
    expect(await s.run("queues")).toEqual({ code: 0, stdout: "no queues\n", stderr: "" });
    await s.run("enqueue", "job-1", "--queue", "zip");
    expect(await s.run("queue", "mail", "--max-leased", "3")).toEqual({ code: 0, stdout: "mail  running  maxLeased 3  rate none\n", stderr: "" });
    expect(await s.store.queues.get("mail")).toEqual({ queue: "mail", paused: false, maxLeased: 3, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS });
    expect(await s.run("queue", "mail")).toEqual({ code: 0, stdout: "mail  running  maxLeased 3  rate none\n", stderr: "" });
    expect(JSON.parse((await s.run("queue", "mail", "--json")).stdout)).toEqual({ queue: "mail", paused: false, maxLeased: 3, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS });
    expect((await s.run("queues")).stdout).toBe("mail  running  maxLeased 3     rate none\nzip   running  maxLeased none  rate none\n");
    expect(JSON.parse((await s.run("queues", "--json")).stdout)).toEqual({
      queues: [{ queue: "mail", paused: false, maxLeased: 3, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS }, { queue: "zip", paused: false, maxLeased: null, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS }],
    });
    expect((await s.run("queue", "mail", "--max-leased", "none")).stdout).toBe("mail  running  maxLeased none  rate none\n");
    expect(await s.store.queues.get("mail")).toEqual({ queue: "mail", paused: false, maxLeased: null, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS });
    expect(await s.store.queues.get("zip")).toEqual({ queue: "zip", paused: false, maxLeased: null, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS }); // the bystander
  });

  test("pause stops claims of the queue, keeping its maxLeased and the leases held; resume starts them again", async () => {
    await using s = await serving();
    await s.run("enqueue", "job-1", "--queue", "mail");
    await s.run("enqueue", "job-2", "--queue", "mail");
    await s.run("claim", "job-1", "--owner", "A", "--ttl-ms", "60000");
    await s.run("queue", "mail", "--max-leased", "5");
    expect(await s.run("pause", "mail")).toEqual({ code: 0, stdout: "paused queue mail: claims take none of its jobs until resume; leases held go on\n", stderr: "" });
    expect(await s.store.queues.get("mail")).toEqual({ queue: "mail", paused: true, maxLeased: 5, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS });
    expect((await s.run("queue", "mail")).stdout).toBe("mail  paused  maxLeased 5  rate none\n");
    // A job is due, and claim-next says why it took none: as a claim by id does, but exit 0 (taking none is no refusal).
    expect(await s.run("claim-next", "mail", "--owner", "B", "--ttl-ms", "60000")).toEqual({
      code: 0,
      stdout: "nothing claimed: queue mail is paused, and claims take none of its jobs until `fencelease resume mail`\n",
      stderr: "",
    });
    expect(JSON.parse((await s.run("claim-next", "mail", "--owner", "B", "--ttl-ms", "60000", "--json")).stdout)).toEqual({ leases: [], blocked: "paused" });
    const refused = await s.run("claim", "job-2", "--owner", "B", "--ttl-ms", "60000");
    expect(refused).toMatchObject({ code: 4, stdout: "", stderr: expect.stringMatching(/^fencelease: refused, not_claimable \(paused\): /) });
    expect((await s.run("renew", "job-1", "--owner", "A", "--fence", "1", "--ttl-ms", "60000")).code).toBe(0); // held leases go on
    expect((await s.run("stats")).stdout).toMatch(/^mail: queued 1, scheduled 0, leased 1, done 0, dead 0, cancelled 0; oldest due \d+ ms ago; refused 0 in the last hour, 0 ever; paused\n$/);
    expect((await s.snapshot())["job-2"]).toMatchObject({ owner: null, fence: 0 });

    expect(JSON.parse((await s.run("resume", "mail", "--json")).stdout)).toEqual({ queue: "mail", paused: false, maxLeased: 5, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS });
    expect(await s.store.queues.get("mail")).toEqual({ queue: "mail", paused: false, maxLeased: 5, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS });
    expect((await s.run("claim-next", "mail", "--owner", "B", "--ttl-ms", "60000")).stdout).toMatch(/^claimed job-2: fence 1/);
    expect((await s.run("resume", "mail")).stdout).toBe("resumed queue mail: its jobs can be claimed again\n"); // again: no change, no error
  });

  test("--rate and --burst set the rate limit, keeping the settings not named; a --rate alone gets the default burst", async () => {
    await using s = await serving();
    await s.run("queue", "mail", "--max-leased", "3");
    expect(await s.run("queue", "mail", "--rate", "5", "--burst", "10")).toEqual({ code: 0, stdout: "mail  running  maxLeased 3  rate 5/s burst 10\n", stderr: "" });
    expect(await s.store.queues.get("mail")).toEqual({ queue: "mail", paused: false, maxLeased: 3, ratePerSecond: 5, burst: 10, ...NO_KEY_LIMITS });
    expect((await s.run("queue", "mail", "--burst", "20")).stdout).toBe("mail  running  maxLeased 3  rate 5/s burst 20\n");
    expect((await s.run("queue", "mail", "--rate", "2.5")).stdout).toBe("mail  running  maxLeased 3  rate 2.5/s burst 3\n");
    expect((await s.run("queue", "mail", "--max-leased", "none")).stdout).toBe("mail  running  maxLeased none  rate 2.5/s burst 3\n");
    expect(JSON.parse((await s.run("queue", "mail", "--rate", "none", "--max-leased", "4", "--json")).stdout)).toEqual({ queue: "mail", paused: false, maxLeased: 4, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS });
    expect(await s.store.queues.get("mail")).toEqual({ queue: "mail", paused: false, maxLeased: 4, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS });
  });

  test("queue sets the limits of its keys with the five options, keeps what is not named; a claim by id is refused by the key, and claim-next says the keys hold its jobs", async () => {
    await using s = await serving();
    await s.run("queue", "mail", "--max-leased", "3");
    const set = await s.run("queue", "mail", "--max-leased-per-key", "2", "--key-rate", "5", "--ordered-by-key", "true", "--fair-by-key", "true");
    expect(set).toEqual({ code: 0, stdout: "mail  running  maxLeased 3  rate none  per key: maxLeased 2, rate 5/s burst 5, ordered, fair\n", stderr: "" });
    const keyed = { queue: "mail", paused: false, maxLeased: 3, ratePerSecond: null, burst: null, maxLeasedPerKey: 2, keyRatePerSecond: 5, keyBurst: 5, orderedByKey: true, fairByKey: true };
    expect(await s.store.queues.get("mail")).toEqual(keyed);
    expect((await s.run("queue", "mail", "--key-burst", "10")).stdout).toBe("mail  running  maxLeased 3  rate none  per key: maxLeased 2, rate 5/s burst 10, ordered, fair\n");
    expect((await s.run("queue", "mail", "--key-rate", "2.5")).stdout).toBe("mail  running  maxLeased 3  rate none  per key: maxLeased 2, rate 2.5/s burst 3, ordered, fair\n");
    expect((await s.run("queues")).stdout).toBe("mail  running  maxLeased 3  rate none  per key: maxLeased 2, rate 2.5/s burst 3, ordered, fair\n");

    await s.run("enqueue", "a-1", "--queue", "mail", "--key", "a");
    await s.run("enqueue", "a-2", "--queue", "mail", "--key", "a");
    const early = await s.run("claim", "a-2", "--owner", "A", "--ttl-ms", "60000");
    expect(early).toMatchObject({ code: 4, stdout: "", stderr: expect.stringMatching(/^fencelease: refused, not_claimable \(key_ordered\): .*\(job "a-1" first\)\n$/) });
    expect((await s.read("/v1/jobs/a-2")).status).toBe("queued");
    await s.run("claim", "a-1", "--owner", "A", "--ttl-ms", "60000");
    const waiting = await s.run("claim-next", "mail", "--owner", "B", "--ttl-ms", "60000");
    expect(waiting).toEqual({
      code: 0,
      stdout: "nothing claimed: the due jobs of queue mail wait for their keys (per key: maxLeased 2, rate 2.5/s burst 3, ordered, fair); claims take them as their keys' leases end\n",
      stderr: "",
    });
    expect(JSON.parse((await s.run("claim-next", "mail", "--owner", "B", "--ttl-ms", "60000", "--json")).stdout)).toEqual({ leases: [], blocked: "keys" });

    expect(JSON.parse((await s.run("queue", "mail", "--key-rate", "none", "--ordered-by-key", "false", "--fair-by-key", "false", "--max-leased-per-key", "none", "--json")).stdout)).toEqual({ ...keyed, ...NO_KEY_LIMITS });
    expect((await s.run("queue", "mail")).stdout).toBe("mail  running  maxLeased 3  rate none\n");
  });

  test("claim-next in a queue its rate limit holds back says when the next claim is allowed", async () => {
    await using s = await serving();
    for (const id of ["job-1", "job-2", "job-3"]) await s.run("enqueue", id, "--queue", "mail");
    await s.run("queue", "mail", "--rate", "0.001", "--burst", "2"); // two at once, then one in 1,000 s
    const first = await s.run("claim-next", "mail", "--owner", "A", "--ttl-ms", "60000", "--limit", "3");
    expect(first.stdout).toMatch(/^claimed job-1: fence 1, .*\nclaimed job-2: fence 1, .*\nrate limited in queue mail: the next claim is allowed in \d+ ms\n$/);
    const next = await s.run("claim-next", "mail", "--owner", "A", "--ttl-ms", "60000", "--json");
    expect(JSON.parse(next.stdout)).toEqual({ leases: [], blocked: "rate_limited", retryAfterMs: expect.any(Number) });
    expect(JSON.parse(next.stdout).retryAfterMs).toBeGreaterThan(990_000);
    expect((await s.run("claim-next", "mail", "--owner", "A", "--ttl-ms", "60000")).stdout).toMatch(/^rate limited in queue mail: the next claim is allowed in \d+ ms\n$/);
    expect((await s.read("/v1/jobs/job-3")).status).toBe("queued");
  });

  test("claim-next in a queue at its maxLeased says it is full; with room again, it claims", async () => {
    await using s = await serving();
    for (const id of ["job-1", "job-2"]) await s.run("enqueue", id, "--queue", "mail");
    await s.run("queue", "mail", "--max-leased", "1");
    await s.run("claim", "job-1", "--owner", "A", "--ttl-ms", "60000");
    expect(await s.run("claim-next", "mail", "--owner", "B", "--ttl-ms", "60000")).toEqual({
      code: 0,
      stdout: "nothing claimed: queue mail is full (maxLeased 1, and 1 held); claims take more as leases end\n",
      stderr: "",
    });
    expect(JSON.parse((await s.run("claim-next", "mail", "--owner", "B", "--ttl-ms", "60000", "--json")).stdout)).toEqual({ leases: [], blocked: "full" });
    expect((await s.snapshot())["job-2"]).toMatchObject({ owner: null, fence: 0 });
    await s.run("complete", "job-1", "--owner", "A", "--fence", "1", "--result", "1");
    expect((await s.run("claim-next", "mail", "--owner", "B", "--ttl-ms", "60000")).stdout).toMatch(/^claimed job-2: fence 1/);
    expect((await s.run("claim-next", "mail", "--owner", "B", "--ttl-ms", "60000")).stdout).toBe("nothing claimed: queue mail is full (maxLeased 1, and 1 held); claims take more as leases end\n");
    await s.run("queue", "mail", "--max-leased", "none");
    expect((await s.run("claim-next", "mail", "--owner", "B", "--ttl-ms", "60000")).stdout).toBe("nothing due in queue mail\n");
  });

  test.each([
    ["a --rate that is not a number", ["queue", "mail", "--rate", "fast"], /--rate must be a number of claims per second, got "fast"/],
    ["a --rate the server refuses", ["queue", "mail", "--rate", "0"], /^fencelease: invalid_request: --rate must be above 0/],
    ["a --burst without a rate", ["queue", "mail", "--burst", "4"], /^fencelease: invalid_request: --burst needs --rate/],
    ["a --burst that is not a whole number", ["queue", "mail", "--rate", "1", "--burst", "1.5"], /--burst must be a whole number/],
    ["a --max-leased the server refuses", ["queue", "mail", "--max-leased", "0"], /^fencelease: invalid_request: --max-leased must be at least 1/],
    ["a --max-leased that is not a number", ["queue", "mail", "--max-leased", "many"], /--max-leased must be a whole number, got "many"/],
    ["a --max-leased without a value", ["queue", "mail", "--max-leased"], /^fencelease: --max-leased needs a value \(see fencelease --help\)\n$/],
    ["a --max-leased-per-key the server refuses", ["queue", "mail", "--max-leased-per-key", "1001"], /^fencelease: invalid_request: --max-leased-per-key must be at most 1000/],
    ["a --key-burst without a key rate", ["queue", "mail", "--key-burst", "4"], /^fencelease: invalid_request: --key-burst needs --key-rate/],
    ["a --key-rate that is not a number", ["queue", "mail", "--key-rate", "fast"], /^fencelease: --key-rate must be a number of claims per second, got "fast"/],
    ["an --ordered-by-key that is not true or false", ["queue", "mail", "--ordered-by-key", "yes"], /^fencelease: --ordered-by-key must be true or false, got "yes"/],
    ["a queue without its name", ["queue"], /queue needs a queue/],
    ["pause without a queue", ["pause"], /pause needs a queue/],
    ["resume of two queues", ["resume", "mail", "zip"], /unexpected argument "zip"/],
    ["queues given an argument", ["queues", "mail"], /unexpected argument "mail"/],
    ["a pause of a queue name too long", ["pause", "q".repeat(256)], /^fencelease: invalid_request: /],
  ])("%s exits 2 and changes nothing", async (_, args, says) => {
    await using s = await serving();
    await s.run("queue", "mail", "--max-leased", "2");
    const ran = await s.run(...args);
    expect(ran).toMatchObject({ code: 2, stdout: "" });
    expect(ran.stderr).toMatch(says);
    expect(ran.stderr.trim().split("\n")).toHaveLength(1);
    expect(await s.store.queues.list()).toEqual([{ queue: "mail", paused: false, maxLeased: 2, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS }]);
  });
});
