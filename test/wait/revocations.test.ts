import { describe, expect, test, vi } from "vitest";
import type { TokenInfo } from "../../src/store/tokens.ts";
import { Revocations, TokenRevoked } from "../../src/wait/revocations.ts";

// Revocations on its own: which waiting calls a revoke ends, and when a revoke
// made elsewhere is seen. The HTTP side (401, nothing handed out) is in
// test/http/tokens.test.ts and, on both Worker modes, test/worker/tokens.test.ts.

const TOKEN: TokenInfo = { id: "tok_a", name: null, role: "worker", queues: ["q"], createdAt: 0 };

describe("Revocations", () => {
  test("a revoke here ends that token's waiting calls at once, with TokenRevoked, and leaves another token's and a client's own signal alone", async () => {
    const revocations = new Revocations(async () => TOKEN);
    const client = new AbortController();
    const mine = [revocations.watch({ id: "tok_a", secret: "s" }, client.signal), revocations.watch({ id: "tok_a", secret: "s" }, new AbortController().signal)];
    const other = revocations.watch({ id: "tok_b", secret: "t" }, new AbortController().signal);
    expect(revocations.watching).toBe(3);
    await revocations.revoked("tok_a");
    expect(mine.map((watch) => [watch.signal.aborted, watch.revoked, watch.signal.reason instanceof TokenRevoked])).toEqual([[true, true, true], [true, true, true]]);
    expect([other.signal.aborted, other.revoked, client.signal.aborted]).toEqual([false, false, false]);
    for (const watch of [...mine, other]) watch.end();
    expect(revocations.watching).toBe(0);
  });

  test("a client that goes aborts its watch, which is not a revoke", () => {
    const revocations = new Revocations(async () => TOKEN);
    const client = new AbortController();
    const watch = revocations.watch({ id: "tok_a", secret: "s" }, client.signal);
    client.abort();
    expect([watch.signal.aborted, watch.revoked]).toEqual([true, false]);
    watch.end();
  });

  test("a revoke made elsewhere is seen within recheckMs: a lookup every recheckMs / 2, shared by the token's calls; one that fails, or finds the token, leaves them waiting", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval", "performance"] });
    try {
      let answer: () => Promise<TokenInfo | null> = async () => TOKEN;
      const lookups = vi.fn(() => answer());
      const revocations = new Revocations(lookups, { recheckMs: 5_000 });
      const first = revocations.watch({ id: "tok_a", secret: "s" }, new AbortController().signal);
      await vi.advanceTimersByTimeAsync(1_000);
      const second = revocations.watch({ id: "tok_a", secret: "s" }, new AbortController().signal);
      await vi.advanceTimersByTimeAsync(1_499);
      expect(lookups).toHaveBeenCalledTimes(0);
      await vi.advanceTimersByTimeAsync(1); // 2.5 s: the first looks; at 3.5 s the second takes its answer
      await vi.advanceTimersByTimeAsync(1_000);
      expect(lookups).toHaveBeenCalledTimes(1);
      answer = async () => Promise.reject(new Error("the database is unavailable"));
      await vi.advanceTimersByTimeAsync(1_500); // 5 s: the first looks again, and fails
      expect([lookups.mock.calls.length, first.signal.aborted, second.signal.aborted]).toEqual([2, false, false]);
      answer = async () => null; // revoked elsewhere at 5 s
      await vi.advanceTimersByTimeAsync(2_500); // 7.5 s: the first finds it gone; at 8.5 s the second has the answer
      expect(first.revoked).toBe(true);
      await vi.advanceTimersByTimeAsync(1_000);
      expect([lookups.mock.calls.length, second.revoked]).toEqual([3, true]);
      for (const watch of [first, second]) watch.end();
      await vi.advanceTimersByTimeAsync(15_000);
      expect(lookups).toHaveBeenCalledTimes(3); // ended: no more lookups
    } finally {
      vi.useRealTimers();
    }
  });

  test("recheckMs must be a positive whole number", () => {
    expect(() => new Revocations(async () => null, { recheckMs: 0 })).toThrow("recheckMs must be a positive whole number of ms, got 0");
  });
});
