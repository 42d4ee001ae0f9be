import { LeaseLost, NotClaimable, NotFound } from "./errors.ts";
import type { Job } from "./job.ts";
import type { EnqueueRequest } from "./shapes.ts";
import type { LeaseStore } from "./store.ts";
import * as check from "./validate.ts";

// The design note's eight operations, with the note's own answers, as a thin
// layer over the store's verbs: the note's contract tests and the mutation
// runs (scripts/note-mutants.ts) call them. They decide nothing: each is one
// verb of LeaseStore, its refusal (NotFound, NotClaimable, LeaseLost) turned
// into false or null. Anything else (InvalidArgument, StorageUnavailable) is
// thrown, as the verb throws it.

/** The design note's operations over a LeaseStore; see `noteVerbs`. */
export type NoteVerbs = {
  /** Adds a job; true if it was created, false (and nothing changed) if the id exists. */
  enqueue(id: string, options?: EnqueueRequest): Promise<boolean>;
  /** The job as stored, with its status at `now`, or null if there is none. */
  state(id: string, now?: number): Promise<Job | null>;
  /** Takes the lease of a job nobody holds; its new fence, or null. */
  claim(id: string, owner: string, now: number, ttlMs: number): Promise<number | null>;
  /** Extends the current lease to `now + ttlMs`; false if it is not current. */
  renew(id: string, owner: string, fence: number, now: number, ttlMs: number): Promise<boolean>;
  /** Stores the result of the current lease; false if it is not current (the same completion sent again included: it writes nothing). */
  complete(id: string, owner: string, fence: number, now: number, result: string): Promise<boolean>;
  /** Gives back a lease that is held and not done; false otherwise. */
  release(id: string, owner: string, fence: number, now?: number): Promise<boolean>;
  /** Ends the current lease as a failed attempt; false if it is not current. */
  fail(id: string, owner: string, fence: number, now: number, error: string, retryInMs?: number): Promise<boolean>;
  /** One claim per owner of the same job, all started at once; the fences in input order: exactly one for a claimable job, null for the others. */
  claimMany(id: string, owners: readonly string[], now: number, ttlMs: number): Promise<(number | null)[]>;
};

/** The answer of a verb, or `refused` when the store refused it; any other error is thrown. */
async function unlessRefused<T, A>(call: Promise<T>, answer: (value: T) => A, refused: A): Promise<A> {
  try {
    return answer(await call);
  } catch (error) {
    if (error instanceof NotFound || error instanceof NotClaimable || error instanceof LeaseLost) return refused;
    throw error;
  }
}

/**
 * noteVerbs answers the design note's operations over `store`.
 *
 * @example
 * const note = noteVerbs(store);
 * await note.enqueue("invoice-42");
 * const fence = await note.claim("invoice-42", "worker-a", Date.now(), 30_000); // 1, or null
 */
export function noteVerbs(store: LeaseStore): NoteVerbs {
  const claim = (id: string, owner: string, now: number, ttlMs: number) => unlessRefused(store.claim(id, { owner, ttlMs, now }), (lease) => lease.fence, null);
  return {
    // An enqueue is never refused: an id that exists answers created: false.
    enqueue: async (id, options = {}) => (await store.enqueue(id, options)).created,
    state: (id, now) => unlessRefused(store.get(id, { now }), (job): Job | null => job, null),
    claim,
    renew: (id, owner, fence, now, ttlMs) => unlessRefused(store.renew(id, { owner, fence, ttlMs, now }), () => true, false),
    complete: (id, owner, fence, now, result) => unlessRefused(store.complete(id, { owner, fence, result, now }), (settled) => settled.changed, false),
    release: (id, owner, fence, now) => unlessRefused(store.release(id, { owner, fence, now }), () => true, false),
    fail: (id, owner, fence, now, error, retryInMs) => unlessRefused(store.fail(id, { owner, fence, error, retryInMs, now }), () => true, false),
    async claimMany(id, owners, now, ttlMs) {
      // Every argument first, so that a bad owner is refused before any claim runs.
      check.name("id", id);
      owners.forEach((owner, i) => check.name(`owners[${i}]`, owner));
      check.instant("now", now);
      check.positiveInt("ttlMs", ttlMs);
      return Promise.all(owners.map((owner) => claim(id, owner, now, ttlMs)));
    },
  };
}
