/** The text of `fencelease --help`: every command with its options. */
export const USAGE = `fencelease: leases with fencing tokens

Usage: fencelease <command> [arguments] [options]

Server:
  serve                          serve the API (HOST, PORT, DATABASE_URL, FENCELEASE_TOKENS or FENCELEASE_AUTH=off,
                                 FENCELEASE_PUSH_PRIVATE=allow|deny)
  migrate                        apply migrations/ to DATABASE_URL (default file:./data/fencelease.db)
  demo                           replay the design note's story and print its timeline
                                 (against --url if given, else a server of its own on a temporary database)
Jobs:
  enqueue <id> [--queue Q] [--key K] [--payload JSON] [--priority N] [--run-at TIME | --delay-ms MS]
                [--max-attempts N] [--dedup-key D (--dedup-ttl-ms MS | --debounce-ms MS [--debounce-max-ms MS] | --supersede)]
                                 TIME: an ISO time with its zone (2026-12-01T09:00:00Z), or ms since the epoch;
                                 K: what the queue's per-key settings limit the job by (a tenant, a user);
                                 D: enqueue once per this key: in a window, debounced, or superseding its job
  enqueue-many <queue> [--file F]
                                 jobs as JSON lines ({"id":"a","key":"k","payload":1} per line) from F or
                                 standard input
  get <id> [--wait [MS]]          with --wait, once the job is done, dead or cancelled (or MS has passed: as it then is)
  claim <id> --owner O --ttl-ms MS
  claim-next <queue> --owner O --ttl-ms MS [--limit N] [--wait MS]
                                 with --wait, wait up to MS (at most 30000) for a job while none is due;
                                 held back by its queue, it says why: paused, full (its maxLeased), its jobs'
                                 keys, or rate limited, and then when to ask again (exit 0: taking none is no
                                 refusal)
  renew <id> --owner O --fence F --ttl-ms MS [--progress JSON]
                                 with --progress, the job's progress, stored if the renew is accepted
  complete <id> --owner O --fence F --result JSON
  step <id> <name> --owner O --fence F --result JSON
                                 record the step's result under the lease; a step recorded already is answered
                                 as recorded (exit 0), a stale lease refused (exit 4)
  release <id> --owner O --fence F
  fail <id> --owner O --fence F --error TEXT [--retry-in-ms MS]
  retry <id>                     put a dead job back in its queue
  delete <id>                    delete a job that is not leased
  cancel <id> [--reason TEXT] [--by NAME]
                                 the job will not run (again); a lease held on it is refused at its next
                                 write. Recorded in its events as by NAME (default "cli")
  list [--queue Q] [--status S[,S...]] [--key K] [--id-prefix P] [--error TEXT] [--limit N] [--cursor C]
       [--created-from T] [--created-to T] [--finished-from T] [--finished-to T]
                                 the jobs that match every filter given (docs/search.md); S: queued,
                                 scheduled, leased, done, dead or cancelled; T: ms or an ISO time
  jobs bulk retry|cancel|delete [the filters of list] [--limit N] [--dry-run] [--reason TEXT] [--by NAME]
                                 retry dead and cancelled jobs, cancel queued, scheduled and leased ones,
                                 or delete finished ones, that match; call after call until done (or N
                                 matched), a progress line each on stderr; --dry-run only counts
  events <id> [--limit N] [--cursor C]
  check-lease <id> --owner O --fence F
                                 exits 0 if that is the current lease, 4 if not, saying why: expired,
                                 superseded, not_owner, done or cancelled (as a stale write is told)
  stats                          per queue: jobs by status, oldest due, refused stale writes, paused
Queues:
  queues                         every queue's settings: paused or running, maxLeased, rate and burst, per key
  queue <queue> [--max-leased N|none] [--rate N|none] [--burst N|none]
                [--max-leased-per-key N|none] [--key-rate N|none] [--key-burst N|none]
                [--ordered-by-key true|false] [--fair-by-key true|false]
                                 read a queue's settings; with options, change those (the others stay):
                                 at most N current leases; N claims a second, in bursts of up to N
                                 (--rate without --burst: the default burst, the rate rounded up);
                                 the same for each key of its jobs; a key's jobs one at a time, in order;
                                 claim-next taking turns between keys
  pause <queue>                  claims take none of the queue's jobs until resume; leases held go on
  resume <queue>                 claims take the queue's jobs again
  keys <queue> [--limit N] [--cursor C]
                                 the queue's keys with open jobs, in key order: waiting and leased jobs,
                                 and why a key holds jobs back (key_full, key_ordered, key_rate_limited)
  series <queue> [--step MS] [--from T] [--to T]
                                 what the queue did a step at a time (default: each minute of the last hour):
                                 enqueued, completed, failed, expired, dead, refused, wait and run p50/p99
Push:
  push list                      every pushed queue: its endpoint, timeout and maxInFlight
  push set <queue> [--endpoint URL] [--timeout-ms N] [--max-in-flight N]
                                 the server claims the queue's due jobs and POSTs each to URL, signed;
                                 the first set prints the secret, once (the options not given stay)
  push get <queue>               the queue's endpoint, timeout and maxInFlight (never the secret)
  push rotate <queue>            a new secret, printed once; the one before signs too until the next rotation
  push rm <queue>                stop pushing; the queue's jobs wait for workers
Schedules:
  schedules                      every schedule, with its next fire
  schedule put <name> --queue Q (--cron EXPR [--tz TZ] | --every-ms N) [--payload JSON] [--priority N]
                      [--max-attempts N] [--key K]
                                 create or replace a schedule; each fire enqueues job <name>@<fire time>
  schedule get <name>
  schedule rm <name>             the schedule fires no more; jobs it enqueued stay
Tokens:
  tokens                         every token made through the API: id, role and queues, name (never a secret)
  token create --role R --queues Q[,Q...] [--name N]
                                 R: admin, producer, worker or reader; Q: a queue, a prefix such as mail-*,
                                 or * for every queue. Prints the secret, this once
  token revoke <id>              the token is refused from now on
  token self                     what the token in use may do

Options:
  --url URL      the server (FENCELEASE_URL; default http://127.0.0.1:8787)
  --token T      a bearer token (FENCELEASE_TOKEN)
  --json         print the server's JSON answer, for scripts
  -h, --help     this text
  --version      the version of fencelease

Exit codes: 0 ok, 2 bad input, 3 not found, 4 refused (409, or check-lease: not current), 5 unreachable,
6 unauthorized, 7 forbidden (the token may not do that), 1 anything else.`;
