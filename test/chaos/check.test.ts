import { describe, expect, test } from "vitest";
import { checkRun, type JobRow, type RunRecord } from "./check.ts";
import type { HistoryLine, Verb } from "./history.ts";

// The checker must fail on each breach it looks for, or a passing chaos run
// proves nothing. Each test writes a small history by hand: a clean story,
// then the same story with one breach put in.

const TTL = 100;

/** A history written request by request: each call records the send and, unless `lost`, the answer. */
function history() {
  const lines: HistoryLine[] = [];
  const seq = new Map<string, number>();
  function request(w: string, t: number, op: Verb, body: Record<string, unknown>, answer: { status: number; body: unknown } | "lost", id?: string) {
    const n = seq.get(w) ?? 0;
    seq.set(w, n + 1);
    lines.push({ k: "send", w, n, t, op, ...(id !== undefined && { id }), body });
    if (answer !== "lost") lines.push({ k: "recv", w, n, t: t + 1, status: answer.status, body: answer.body });
  }
  const job = (id: string, owner: string | null, fence: number, until: number, updatedAt: number, done = false) => ({ id, owner, fence, until, updatedAt, done });
  return {
    lines,
    claim(w: string, id: string, fence: number, t: number) {
      request(w, t, "claim-next", { owner: w, ttlMs: TTL, limit: 1 }, { status: 200, body: { leases: [{ fence, until: t + TTL, job: job(id, w, fence, t + TTL, t) }] } });
    },
    renew(w: string, id: string, fence: number, t: number, accepted = true) {
      request(w, t, "renew", { owner: w, fence, ttlMs: TTL }, accepted ? { status: 200, body: { until: t + TTL } } : { status: 409, body: { error: { code: "stale_lease" } } }, id);
    },
    complete(w: string, id: string, fence: number, t: number, answer: "accepted" | "refused" | "lost" = "accepted") {
      const body = { owner: w, fence, result: { owner: w, fence, id } };
      const answered = answer === "lost" ? "lost" : answer === "accepted" ? { status: 200, body: { job: job(id, w, fence, 0, t, true) } } : { status: 409, body: { error: { code: "stale_lease" } } };
      request(w, t, "complete", body, answered, id);
    },
    release(w: string, id: string, fence: number, t: number, answer: "accepted" | "lost" = "accepted") {
      request(w, t, "release", { owner: w, fence }, answer === "lost" ? "lost" : { status: 200, body: { job: job(id, null, fence, 0, t) } }, id);
    },
  };
}

const doneRow = (id: string, owner: string, fence: number, result = { owner, fence, id }): JobRow => ({
  id, owner, until: 0, fence, result: JSON.stringify(result), done: 1, attempts: fence,
});

function run(lines: HistoryLine[], rows: JobRow[], extra: Partial<RunRecord> = {}): string[] {
  return checkRun({ lines, events: [], enqueued: rows.map((row) => row.id), rows, integrity: ["ok"], now: 10_000, ...extra }).violations;
}

/** The story of the README: A claims, stalls past its lease, B takes over and completes; A's late writes are refused. */
function story() {
  const h = history();
  h.claim("A", "j", 1, 1000);
  h.claim("B", "j", 2, 1000 + TTL);
  h.renew("A", "j", 1, 1000 + TTL + 5, false);
  h.complete("B", "j", 2, 1000 + TTL + 10);
  h.complete("A", "j", 1, 1000 + TTL + 20, "refused");
  return h;
}

describe("the chaos checker", () => {
  test("passes the story of a zombie refused and counts what happened", () => {
    const h = story();
    const { violations, counts } = checkRun({ lines: h.lines, events: [], enqueued: ["j"], rows: [doneRow("j", "B", 2)], integrity: ["ok"], now: 10_000 });
    expect(violations).toEqual([]);
    expect(counts).toMatchObject({ jobs: 1, done: 1, claims: 2, completions: 1, refusedStaleWrites: 2 });
  });

  test("fails on a job completed twice", () => {
    const h = story();
    h.complete("A", "j", 1, 1000 + TTL + 30); // accepted this time
    expect(run(h.lines, [doneRow("j", "B", 2)]).join("\n")).toMatch(/completed twice/);
  });

  test("fails on an accepted write with a superseded fence", () => {
    const h = story();
    h.renew("A", "j", 1, 1000 + TTL + 6); // accepted, after fence 2 was handed out
    expect(run(h.lines, [doneRow("j", "B", 2)]).join("\n")).toMatch(/renew of A with fence 1 was accepted .* after fence 2/);
  });

  test("fails on a renew accepted after its lease had expired", () => {
    const h = history();
    h.claim("A", "j", 1, 1000);
    h.renew("A", "j", 1, 1000 + TTL); // at now == until the lease has expired
    h.complete("A", "j", 1, 1000 + TTL + 1);
    expect(run(h.lines, [doneRow("j", "A", 1)]).join("\n")).toMatch(/after its lease ended/);
  });

  test("fails on a fence handed out twice, or in the wrong order", () => {
    const twice = history();
    twice.claim("A", "j", 1, 1000);
    twice.claim("B", "j", 1, 1000 + TTL);
    expect(run(twice.lines, [doneRow("j", "B", 1)]).join("\n")).toMatch(/fence 1 was handed out twice/);
    const backwards = history();
    backwards.claim("A", "j", 2, 1000);
    backwards.claim("B", "j", 1, 1000 + TTL);
    expect(run(backwards.lines, [doneRow("j", "A", 2)]).join("\n")).toMatch(/did not increase/);
  });

  test("fails on a lease handed out while the one before it still held", () => {
    const h = history();
    h.claim("A", "j", 1, 1000);
    h.claim("B", "j", 2, 1000 + TTL - 1);
    h.complete("B", "j", 2, 1000 + TTL);
    expect(run(h.lines, [doneRow("j", "B", 2)]).join("\n")).toMatch(/while fence 1 of A held until 1100/);
  });

  test("takes a release whose answer was lost as possibly applied, and so finds no breach in the next claim", () => {
    const h = history();
    h.claim("A", "j", 1, 1000);
    h.release("A", "j", 1, 1010, "lost");
    h.claim("B", "j", 2, 1020);
    h.complete("B", "j", 2, 1030);
    expect(run(h.lines, [doneRow("j", "B", 2)])).toEqual([]);
  });

  test("fails on a stored result not written by the holder of the last fence", () => {
    const h = story();
    expect(run(h.lines, [doneRow("j", "B", 2, { owner: "A", fence: 1, id: "j" })]).join("\n")).toMatch(/not written by B, the holder of its last fence 2/);
    expect(run(h.lines, [doneRow("j", "A", 1)]).join("\n")).toMatch(/fence 2 was handed to B, but the row names A|below fence 2/);
  });

  test("fails on a job lost: gone, or neither done nor claimable", () => {
    const h = story();
    expect(run(h.lines, [], { enqueued: ["j"] }).join("\n")).toMatch(/j was enqueued and is gone/);
    const held: JobRow = { id: "j", owner: "C", until: 20_000, fence: 3, result: null, done: 0, attempts: 3 };
    expect(run(h.lines, [held]).join("\n")).toMatch(/neither done nor claimable/);
    const claimable = { ...held, until: 9_000 };
    expect(run(h.lines, [claimable])).toEqual([]);
  });

  test("fails when PRAGMA integrity_check is not ok", () => {
    expect(run(story().lines, [doneRow("j", "B", 2)], { integrity: ["row 3 missing from index jobs_claim_order"] }).join("\n")).toMatch(/integrity_check/);
  });
});
