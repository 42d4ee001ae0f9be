-- Tokens scoped to what they may do (issue 21). Each row is one API token: its
-- role (admin, producer, worker, reader) and the queues it may touch, as a JSON
-- array of names and prefixes ("mail-*"), or ["*"] for all. The secret is never
-- stored, only its SHA-256 (hex): a request's bearer token is hashed and looked
-- up by this unique index, so a copy of the database lets no one call the API.
-- A revoke deletes the row. The bootstrap tokens of FENCELEASE_TOKENS are not
-- here; they stay admin for every queue.
CREATE TABLE tokens (
  id         TEXT    PRIMARY KEY,                       -- tok_ and 16 hex digits: names the token, grants nothing
  hash       TEXT    NOT NULL UNIQUE,                   -- SHA-256 of the secret, 64 hex digits
  role       TEXT    NOT NULL CHECK (role IN ('admin', 'producer', 'worker', 'reader')),
  queues     TEXT    NOT NULL,                          -- JSON array of queue names and prefixes
  name       TEXT,                                      -- what the person who made it called it
  created_at INTEGER NOT NULL                           -- ms since the epoch
);
