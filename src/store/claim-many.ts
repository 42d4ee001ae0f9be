import { openStore } from "../runtime/node/open.ts";
import * as check from "./validate.ts";

/**
 * claimMany races one claim per owner for the same job, each owner on its own
 * connection to the database at `url`, all started at once; answers the fences
 * in input order. Exactly one owner wins a claimable job; the others get null.
 */
export async function claimMany(
  url: string,
  id: string,
  owners: readonly string[],
  now: number,
  ttlMs: number,
): Promise<(number | null)[]> {
  check.name("id", id);
  owners.forEach((owner, i) => check.name(`owners[${i}]`, owner));
  check.instant("now", now);
  check.positiveInt("ttlMs", ttlMs);
  if (owners.length === 0) return [];

  const first = await openStore({ url });
  const others = await Promise.allSettled(owners.slice(1).map(() => openStore({ url, migrations: false })));
  const stores = [first, ...others.flatMap((opened) => (opened.status === "fulfilled" ? [opened.value] : []))];
  try {
    const failed = others.find((opened) => opened.status === "rejected");
    if (failed) throw failed.reason;
    return await Promise.all(owners.map((owner, i) => stores[i]!.claim(id, owner, now, ttlMs)));
  } finally {
    for (const store of stores) store.close();
  }
}
