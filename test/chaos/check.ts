// The checker of a chaos run: reads the history every worker recorded and the
// database as it was left, and lists every breach of the fencing contract. It
// trusts nothing the workers believe, only what the server answered and what
// the file holds. Times are the server's (`updatedAt`, `until` in its answers)
// or, for a request whose answer never came, the worker's send time; both are
// read from the same machine clock.
//
// A request without an answer (its worker was killed, or the server was) may
// or may not have been applied, so every rule below holds for either outcome:
// it is only ever used to weaken a bound, never to prove a breach.
import type { ChaosEvent, HistoryLine, Verb } from "./history.ts";

/** A `jobs` row as the checker reads it. */
export type JobRow = { id: string; owner: string | null; until: number; fence: number; result: string | null; done: number; attempts: number };

/** Everything a run leaves behind. `now` is when the database was read. */
export type RunRecord = {
  lines: HistoryLine[];
  events: ChaosEvent[];
  enqueued: string[];
  rows: JobRow[];
  integrity: string[];
  now: number;
};

export type Counts = {
  jobs: number;
  done: number;
  /** Jobs not done but claimable: only after a run that ran out of time. */
  unfinished: number;
  requests: number;
  /** Requests whose answer never came: the worker or the server was killed, or the connection failed. */
  unanswered: number;
  claims: number;
  completions: number;
  /** Renew, complete and release answered 409 stale_lease. */
  refusedStaleWrites: number;
  zombies: number;
  /** Writes of zombies after their stall, refused. */
  zombieWritesRefused: number;
  kills: number;
  killsMidRequest: number;
  restarts: number;
  unavailable: number;
};

type Request = {
  w: string;
  n: number;
  op: Verb;
  id?: string;
  body: Record<string, any>;
  sentAt: number;
  status?: number;
  answer?: any;
  failed?: string;
};

type Grant = { fence: number; owner: string; t: number; until: number; w: string };

/** Checks a run; answers every violation found, and the counts. */
export function checkRun(run: RunRecord): { violations: string[]; counts: Counts } {
  const violations: string[] = [];
  const fail = (message: string) => violations.length < 200 && violations.push(message);

  // Pair each request with its answer.
  const requests = new Map<string, Request>();
  const lastOf = new Map<string, Request>();
  const stalls = run.lines.filter((line) => line.k === "stall");
  for (const line of run.lines) {
    if (line.k === "send") {
      const request: Request = { w: line.w, n: line.n, op: line.op, id: line.id, body: line.body, sentAt: line.t };
      requests.set(`${line.w}#${line.n}`, request);
      const last = lastOf.get(line.w);
      if (!last || last.n < line.n) lastOf.set(line.w, request);
    } else if (line.k === "recv" || line.k === "fail") {
      const request = requests.get(`${line.w}#${line.n}`);
      if (!request) fail(`${line.w} recorded an answer to request ${line.n}, which it never sent`);
      else if (line.k === "recv") Object.assign(request, { status: line.status, answer: line.body });
      else request.failed = line.error;
    }
  }
  const all = [...requests.values()];
  const answered = (request: Request) => request.status !== undefined;
  const accepted = (request: Request) => request.status === 200;
  const mayHaveApplied = (request: Request) => request.status === 200 || !answered(request);

  // The leases handed out, per job, from claim-next answers.
  const grants = new Map<string, Grant[]>();
  for (const request of all.filter((r) => r.op === "claim-next" && accepted(r))) {
    for (const lease of request.answer.leases as { fence: number; until: number; job: { id: string; owner: string; updatedAt: number } }[]) {
      if (lease.job.owner !== request.body.owner) fail(`${request.w} claimed ${lease.job.id} but the lease names ${lease.job.owner}`);
      const list = grants.get(lease.job.id) ?? [];
      list.push({ fence: lease.fence, owner: lease.job.owner, t: lease.job.updatedAt, until: lease.until, w: request.w });
      grants.set(lease.job.id, list);
    }
  }
  const writes = new Map<string, Request[]>();
  for (const request of all.filter((r) => r.id !== undefined)) writes.set(request.id!, [...(writes.get(request.id!) ?? []), request]);

  for (const [id, list] of grants) {
    // Each fence once, and in the order the server handed them out.
    const byFence = new Map<number, Grant>();
    for (const grant of list) {
      const other = byFence.get(grant.fence);
      if (other) fail(`job ${id}: fence ${grant.fence} was handed out twice, to ${other.owner} and to ${grant.owner}`);
      byFence.set(grant.fence, grant);
    }
    const inTime = [...list].sort((a, b) => a.t - b.t || a.fence - b.fence);
    for (let i = 1; i < inTime.length; i++) {
      if (inTime[i]!.fence <= inTime[i - 1]!.fence) {
        fail(`job ${id}: fence ${inTime[i]!.fence} at ${inTime[i]!.t} did not increase on fence ${inTime[i - 1]!.fence} at ${inTime[i - 1]!.t}`);
      }
    }
    // Leases never overlap: the next fence is handed out only once the lease before it ended, by expiry or release.
    const jobWrites = writes.get(id) ?? [];
    for (const [fence, grant] of byFence) {
      const next = byFence.get(fence + 1);
      if (!next) continue;
      const ofLease = jobWrites.filter((w) => w.body.fence === fence && w.body.owner === grant.owner);
      const renewedTo = ofLease.filter((w) => w.op === "renew" && accepted(w)).map((w) => w.answer.until as number);
      const releasedBy = ofLease.filter((w) => w.op === "release" && mayHaveApplied(w)).map((w) => (accepted(w) ? w.answer.job.updatedAt : w.sentAt) as number);
      const ended = Math.min(Math.max(grant.until, ...renewedTo), ...releasedBy);
      if (next.t < ended) fail(`job ${id}: fence ${fence + 1} was handed to ${next.owner} at ${next.t}, while fence ${fence} of ${grant.owner} held until ${ended}`);
    }
  }

  // No write with a superseded fence is ever accepted.
  const completions = new Map<string, Set<string>>();
  for (const write of all.filter((r) => r.id !== undefined && accepted(r))) {
    const id = write.id!;
    const fence = write.body.fence as number;
    const at = write.op === "renew" ? write.answer.until - write.body.ttlMs : write.answer.job.updatedAt;
    const newer = (grants.get(id) ?? []).filter((g) => g.fence > fence && (write.op === "release" ? g.t < at : g.t <= at));
    if (newer.length > 0) fail(`job ${id}: ${write.op} of ${write.w} with fence ${fence} was accepted at ${at}, after fence ${newer[0]!.fence} was handed out at ${newer[0]!.t}`);
    // An expired lease is never revived: a renew or complete is accepted only before the lease's end.
    const grant = (grants.get(id) ?? []).find((g) => g.fence === fence);
    const renews = (writes.get(id) ?? []).filter((w) => w.op === "renew" && w.body.fence === fence && w !== write);
    if (grant && write.op !== "release" && renews.every(answered)) {
      const until = Math.max(grant.until, ...renews.filter((w) => accepted(w) && w.answer.until - w.body.ttlMs < at).map((w) => w.answer.until as number));
      if (at >= until) fail(`job ${id}: ${write.op} of ${write.w} with fence ${fence} was accepted at ${at}, after its lease ended at ${until}`);
    }
    if (write.op === "complete") {
      if (write.answer.job.fence !== fence || write.answer.job.owner !== write.body.owner) fail(`job ${id}: a complete of ${write.w} with fence ${fence} was answered with fence ${write.answer.job.fence} of ${write.answer.job.owner}`);
      completions.set(id, (completions.get(id) ?? new Set()).add(`${write.body.owner} with fence ${fence}`));
    }
  }
  for (const [id, by] of completions) if (by.size > 1) fail(`job ${id} was completed twice: by ${[...by].join(" and by ")}`);

  // The database as it was left.
  const rows = new Map(run.rows.map((row) => [row.id, row]));
  const enqueued = new Set(run.enqueued);
  for (const row of run.rows) if (!enqueued.has(row.id)) fail(`job ${row.id} is in the database but was never enqueued`);
  let done = 0;
  let unfinished = 0;
  for (const id of run.enqueued) {
    const row = rows.get(id);
    if (!row) {
      fail(`job ${id} was enqueued and is gone`);
      continue;
    }
    const maxGranted = Math.max(0, ...(grants.get(id) ?? []).map((g) => g.fence));
    if (row.fence < maxGranted) fail(`job ${id}: its fence is ${row.fence}, below fence ${maxGranted} handed out`);
    // Every claim raises both; a release in time gives the attempt back, so attempts never pass the fence.
    if (row.attempts > row.fence) fail(`job ${id}: ${row.attempts} attempts but fence ${row.fence}`);
    if (!row.done) {
      if (row.until > run.now) fail(`job ${id} is neither done nor claimable: held by ${row.owner} until ${row.until}, checked at ${run.now}`);
      else unfinished++;
      continue;
    }
    done++;
    const last = (grants.get(id) ?? []).find((g) => g.fence === row.fence);
    if (last && last.owner !== row.owner) fail(`job ${id}: fence ${row.fence} was handed to ${last.owner}, but the row names ${row.owner}`);
    let result: { owner?: string; fence?: number; id?: string } = {};
    try {
      result = JSON.parse(row.result ?? "null") ?? {};
    } catch {
      // an unreadable result is caught just below
    }
    if (result.owner !== row.owner || result.fence !== row.fence || result.id !== id) {
      fail(`job ${id}: the stored result ${row.result} was not written by ${row.owner}, the holder of its last fence ${row.fence}`);
    }
    const writer = (writes.get(id) ?? []).some((w) => w.op === "complete" && mayHaveApplied(w) && w.body.owner === row.owner && w.body.fence === row.fence);
    if (!writer) fail(`job ${id}: no complete from ${row.owner} with fence ${row.fence} was ever sent, yet the job is done`);
    for (const by of completions.get(id) ?? []) {
      if (by !== `${row.owner} with fence ${row.fence}`) fail(`job ${id}: a complete of ${by} was accepted, but the job is done by ${row.owner} with fence ${row.fence}`);
    }
  }
  if (run.integrity.length !== 1 || run.integrity[0] !== "ok") fail(`PRAGMA integrity_check: ${run.integrity.join("; ")}`);
  for (const event of run.events) if (event.k === "crash") fail(`${event.w} crashed (exit ${event.code}): ${event.stderr}`);

  const zombieWrites = stalls.flatMap((stall) =>
    (writes.get(stall.id) ?? []).filter((w) => w.w === stall.w && w.body.fence === stall.fence && w.op !== "claim-next" && w.sentAt >= stall.t && answered(w)),
  );
  const kills = run.events.filter((event) => event.k === "kill");
  return {
    violations,
    counts: {
      jobs: run.enqueued.length,
      done,
      unfinished,
      requests: all.length,
      unanswered: all.filter((r) => !answered(r)).length,
      claims: [...grants.values()].reduce((sum, list) => sum + list.length, 0),
      completions: [...completions.values()].reduce((sum, by) => sum + by.size, 0),
      refusedStaleWrites: all.filter((r) => r.status === 409 && r.answer?.error?.code === "stale_lease").length,
      zombies: stalls.length,
      zombieWritesRefused: zombieWrites.filter((w) => w.status === 409).length,
      kills: kills.length,
      killsMidRequest: kills.filter((kill) => {
        const last = lastOf.get(kill.w);
        return last !== undefined && !answered(last) && last.failed === undefined;
      }).length,
      restarts: run.events.filter((event) => event.k === "restart").length,
      unavailable: all.filter((r) => r.status === 503).length,
    },
  };
}
