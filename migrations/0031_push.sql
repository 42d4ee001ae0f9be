-- Push delivery (issue 21, part 1): a queue may be given an endpoint, and the
-- service then claims the queue's due jobs itself and POSTs each one there,
-- signed as Standard Webhooks sign (src/push/). Nothing here decides a lease:
-- the push claim is the claim-next statement with one more cap (claimToPush in
-- src/store/sql/lease.ts), and the endpoint's answer goes through the same
-- fenced complete and fail as any worker's.

-- One row per pushed queue. The secrets are kept as given to the user
-- (whsec_ and base64): an HMAC is signed with the secret itself, so it cannot
-- be kept hashed. A rotation keeps the secret it replaces as previous_secret,
-- and deliveries are signed with both until the next rotation.
CREATE TABLE push_endpoints (
  queue           TEXT    PRIMARY KEY,
  url             TEXT    NOT NULL,
  timeout_ms      INTEGER NOT NULL CHECK (timeout_ms > 0),
  max_in_flight   INTEGER NOT NULL CHECK (max_in_flight > 0),
  secret          TEXT    NOT NULL,
  previous_secret TEXT,
  rotated_at      INTEGER,            -- the last rotation; NULL before the first
  created_at      INTEGER NOT NULL,
  updated_at      INTEGER NOT NULL
);

-- A delivery is an event of its job (kind 'pushed', action its outcome:
-- success, accepted, failure, timeout or unreachable; the endpoint's status
-- and the time it took as JSON in its progress, which only a renew uses
-- otherwise), so that the history of the other jobs keeps its size. Its
-- statement counts it here too: counters for /metrics that outlive the purge
-- of old events, as refusal_counts do.
CREATE TABLE push_counts (
  queue       TEXT    NOT NULL,
  outcome     TEXT    NOT NULL,
  deliveries  INTEGER NOT NULL,
  duration_ms INTEGER NOT NULL,
  PRIMARY KEY (queue, outcome)
) WITHOUT ROWID;
