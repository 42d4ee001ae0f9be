import { NotClaimableError } from "./errors.ts";
import type { LeaseClient } from "./lease-client.ts";

/**
 * claimMany races one claim per owner for the same job over HTTP, all in
 * flight at once; answers the fences in input order: exactly one owner wins
 * a claimable job, the others get null.
 */
export async function claimMany(client: LeaseClient, id: string, owners: readonly string[], ttlMs: number): Promise<(number | null)[]> {
  return Promise.all(
    owners.map((owner) =>
      client.claim(id, { owner, ttlMs }).then(
        (lease) => lease.fence,
        (error: unknown) => {
          if (error instanceof NotClaimableError) return null;
          throw error;
        },
      ),
    ),
  );
}
