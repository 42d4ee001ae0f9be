// The history of a chaos run: what every worker sent and what came back, one
// JSON object per line, each worker process appending to its own file with a
// synchronous write (so a SIGKILL loses nothing already written), and the
// orchestrator's own events (kills, restarts) in events.jsonl.

/** A lease verb a worker sends. */
export type Verb = "claim-next" | "renew" | "complete" | "release";

/** One line of a worker's history file. `w` names the worker process, `n` numbers its requests. */
export type HistoryLine =
  /** A request about to be sent; `id` is the job for renew, complete and release. */
  | { k: "send"; w: string; n: number; t: number; op: Verb; id?: string; body: Record<string, unknown> }
  /** Its answer: status and JSON body. */
  | { k: "recv"; w: string; n: number; t: number; status: number; body: any }
  /** It failed before an answer came (connection refused or reset): its outcome is unknown. */
  | { k: "fail"; w: string; n: number; t: number; error: string }
  /** The worker stalls past its lease on purpose, then comes back as a zombie. */
  | { k: "stall"; w: string; t: number; id: string; fence: number; ms: number };

/** One line of events.jsonl, written by the orchestrator. */
export type ChaosEvent =
  | { k: "kill"; w: string; t: number }
  | { k: "restart"; t: number; url: string }
  | { k: "crash"; w: string; t: number; code: number | null; stderr: string };

/** Parses a JSONL file's text; a torn last line (the writer was killed mid-write) is dropped. */
export function parseLines<T>(text: string): T[] {
  const lines = text.split("\n").filter((line) => line.length > 0);
  const parsed: T[] = [];
  for (const [i, line] of lines.entries()) {
    try {
      parsed.push(JSON.parse(line) as T);
    } catch (error) {
      if (i !== lines.length - 1) throw error;
    }
  }
  return parsed;
}
