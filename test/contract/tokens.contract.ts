import { describe, expect, test } from "vitest";
import { InvalidArgument, NotFound } from "../../src/store/errors.ts";
import { hashOf, inScope } from "../../src/store/tokens.ts";
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
      ["101 queues", { role: "reader", queues: Array.from({ length: 101 }, (_, i) => `q${i}`) }, 'queues must be a list of 1 to 100 queue names or prefixes such as "mail-*" (["*"] for every queue), got 101 entries'],
      ["a name of 256 bytes in 128 characters", { role: "reader", queues: ["*"], name: "é".repeat(128) }, "name must be at most 255 bytes of UTF-8, got 256"],
      ["an empty name", { role: "reader", queues: ["*"], name: "" }, 'name must be a non-empty string of printable text, got ""'],
      ["a bad now", { role: "reader", queues: ["*"], now: -1 }, "now must be integer milliseconds since the epoch, got -1"],
    ])("%s is InvalidArgument, and no token is made", async (_, token, message) => {
      const { store } = await freshStore();
      await expect(store.tokens.create({ now: T, ...(token as object) } as never)).rejects.toThrow(new InvalidArgument(message));
      expect(await store.tokens.list()).toEqual([]);
    });

    test("100 queues and a name of 255 bytes are kept", async () => {
      const { store } = await freshStore();
      const queues = Array.from({ length: 100 }, (_, i) => `q${i}`);
      const name = `${"é".repeat(127)}n`;
      const made = await store.tokens.create({ role: "reader", queues, name, now: T });
      expect(made).toMatchObject({ queues, name });
      expect(await store.tokens.find(made.token)).toMatchObject({ queues, name });
    });

    test("a * among the queues is every queue, and a queue given twice is kept once", async () => {
      const { store } = await freshStore();
      const all = await store.tokens.create({ role: "reader", queues: ["mail", "*", "ops"], now: T });
      const twice = await store.tokens.create({ role: "reader", queues: ["mail", "ops", "mail"], now: T });
      expect(all.queues).toEqual(["*"]);
      expect(twice.queues).toEqual(["mail", "ops"]);
      expect((await store.tokens.list()).map((token) => token.queues)).toEqual([["*"], ["mail", "ops"]]);
    });

    test("each secret is fl_ and 43 characters of base64url and each id tok_ and 16 hex digits, all different", async () => {
      const { store } = await freshStore();
      // About half the secrets hold a _ (a / of base64) and 4 ids in 10 a byte below 16 (a padded 0): 32 of them show both.
      const made = [];
      for (let i = 0; i < 32; i++) made.push(await store.tokens.create({ role: "reader", queues: ["*"], now: T }));
      for (const token of made) {
        expect(token.token).toMatch(/^fl_[A-Za-z0-9_-]{43}$/);
        expect(token.id).toMatch(/^tok_[0-9a-f]{16}$/);
      }
      expect(new Set(made.map((token) => token.token)).size).toBe(32);
      expect(new Set(made.map((token) => token.id)).size).toBe(32);
      expect((await store.tokens.list()).map((token) => token.id)).toEqual(made.map((token) => token.id));
    });

    test("revoke refuses a bad id by name, and deletes nothing", async () => {
      const { store } = await freshStore();
      const kept = await store.tokens.create({ role: "reader", queues: ["*"], now: T });
      await expect(store.tokens.revoke("")).rejects.toThrow(new InvalidArgument('id must be a non-empty string of printable text, got ""'));
      expect(await store.tokens.find(kept.token)).toMatchObject({ id: kept.id });
    });
  });

  describe("a token's scope and secret", () => {
    test("inScope: a queue is covered by its own name, by a prefix it starts with, or by *; by nothing else", () => {
      const scope = ["invoices", "mail-*"];
      expect(inScope(scope, "invoices")).toBe(true);
      expect(inScope(scope, "mail-eu")).toBe(true);
      expect(inScope(scope, "mail-")).toBe(true);
      expect(inScope(scope, "mail")).toBe(false);
      expect(inScope(scope, "invoices-old")).toBe(false);
      expect(inScope(scope, "old-invoices")).toBe(false);
      expect(inScope(scope, "eu-mail-")).toBe(false);
      expect(inScope(["*"], "anything")).toBe(true);
      expect(inScope([], "invoices")).toBe(false);
    });

    test("hashOf is the SHA-256 of the secret in lowercase hex, two digits a byte", async () => {
      expect(await hashOf("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
      expect(await hashOf("")).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    });
  });
}
