import { describe, expect, test } from "vitest";
import { InvalidArgument, NotFound } from "../../src/store/errors.ts";
import type { FreshStore } from "./store.contract.ts";

// The API tokens of migrations/0030 (`store.tokens`), run against every driver
// as the store contract is: made, found by their secret, listed without it,
// revoked; a bad token is refused before anything is written.

const T = Date.UTC(2026, 0, 1);

/** Registers the tokens' contract for one driver. */
export function tokensContract(freshStore: () => Promise<FreshStore>): void {
  describe("tokens", () => {
    test("a token made is found by its secret, and only by it", async () => {
      const { store } = await freshStore();
      const made = await store.tokens.create({ role: "worker", queues: ["invoices", "mail-*"], name: "billing", now: T });
      const shown = { id: made.id, name: "billing", role: "worker", queues: ["invoices", "mail-*"], createdAt: T };
      expect(made).toEqual({ ...shown, token: expect.stringMatching(/^fl_[\w-]{43}$/) });
      expect(await store.tokens.find(made.token)).toEqual(shown);
      expect(await store.tokens.find(`${made.token}x`)).toBeNull();
      expect(await store.tokens.find(made.token.slice(0, -1))).toBeNull();
      expect(await store.tokens.find(made.id)).toBeNull();
    });

    test("list answers every token, oldest first, with no secret", async () => {
      const { store } = await freshStore();
      const first = await store.tokens.create({ role: "reader", queues: ["*"], now: T });
      const second = await store.tokens.create({ role: "admin", queues: ["ops"], name: "ops", now: T + 1 });
      expect(await store.tokens.list()).toEqual([
        { id: first.id, name: null, role: "reader", queues: ["*"], createdAt: T },
        { id: second.id, name: "ops", role: "admin", queues: ["ops"], createdAt: T + 1 },
      ]);
    });

    test("revoke deletes a token: its secret is found no more; the others stay; an unknown id is NotFound", async () => {
      const { store } = await freshStore();
      const gone = await store.tokens.create({ role: "reader", queues: ["*"], now: T });
      const kept = await store.tokens.create({ role: "reader", queues: ["*"], now: T });
      await store.tokens.revoke(gone.id);
      expect(await store.tokens.find(gone.token)).toBeNull();
      expect(await store.tokens.find(kept.token)).toMatchObject({ id: kept.id });
      await expect(store.tokens.revoke(gone.id)).rejects.toThrow(new NotFound(gone.id, `no token has the id ${JSON.stringify(gone.id)}`));
    });

    test("queuesOf answers the queue of each job that exists, for a token's check, in one read", async () => {
      const { store } = await freshStore();
      await store.enqueueMany("invoices", { jobs: [{ id: "a" }, { id: "b" }], now: T });
      await store.enqueue("c", { queue: "mail", now: T });
      expect(await store.queuesOf(["c", "a", "nope", "b"])).toEqual(new Map([["a", "invoices"], ["b", "invoices"], ["c", "mail"]]));
      expect(await store.queuesOf([])).toEqual(new Map());
    });

    test.each([
      ["an unknown role", { role: "root", queues: ["*"] }, "role must be one of admin, producer, worker, reader, got \"root\""],
      ["no queues", { role: "reader", queues: [] }, 'queues must be a list of 1 to 100 queue names or prefixes such as "mail-*" (["*"] for every queue), got 0 entries'],
      ["a * inside", { role: "reader", queues: ["ok", "a*b"] }, 'queues[1] may have a * only at its end (a prefix, such as "mail-*"), got "a*b"'],
      ["a control character", { role: "reader", queues: ["a\nb"] }, 'queues[0] must be a non-empty string of printable text, got "a\\nb"'],
      ["a name too long", { role: "reader", queues: ["*"], name: "n".repeat(256) }, "name must be at most 255 bytes of UTF-8, got 256"],
    ])("%s is InvalidArgument, and no token is made", async (_, token, message) => {
      const { store } = await freshStore();
      await expect(store.tokens.create({ ...(token as object), now: T } as never)).rejects.toThrow(new InvalidArgument(message));
      expect(await store.tokens.list()).toEqual([]);
    });
  });
}
