#!/bin/sh
# `npm run dev`: the Worker in workerd on a local D1, on port 8788 (wrangler.toml's [dev]),
# so that it and `npm start` (8787) can run side by side. Arguments go to `wrangler dev`
# (`npm run dev -- --port 9000`); `npm run dev -- -c wrangler.objects.toml` runs it in
# objects mode. The first line says which mode runs.
set -eu

# Quiet and offline: no banner (and so no update check against the registry), no fetch of
# the Request.cf object from the network (a placeholder serves locally), no telemetry.
export WRANGLER_HIDE_BANNER=true CLOUDFLARE_CF_FETCH_ENABLED=false WRANGLER_SEND_METRICS=false
# One line a request, wrangler's: the Worker's own request log (console.log, what `wrangler
# tail` shows once deployed) would repeat each. Errors still show; WRANGLER_LOG=log shows all.
export WRANGLER_LOG="${WRANGLER_LOG:-info}"

# The config that `wrangler dev` is given (-c FILE, --config FILE or --config=FILE), and its storage mode.
config=wrangler.toml
previous=""
for arg in "$@"; do
  case "$previous" in -c|--config) config=$arg ;; esac
  case "$arg" in --config=*) config=${arg#--config=} ;; esac
  previous=$arg
done
if grep -Eq '^STORAGE *= *"objects"' "$config"; then
  # Each queue's object applies the migrations to its own SQLite: there is no D1 to migrate.
  echo "objects mode ($config): each queue in its own Durable Object, kept in .wrangler/state; no D1"
else
  # The migrations with no confirmation prompt (standard input is not a terminal, so wrangler
  # goes ahead), and their tables only when one fails.
  if ! out=$(WRANGLER_LOG=log wrangler d1 migrations apply fencelease --local -c "$config" </dev/null 2>&1); then
    printf '%s\n' "$out" >&2
    exit 1
  fi
  applied=$(printf '%s\n' "$out" | sed -n 's/.*About to apply \([0-9]*\) migration(s).*/\1/p')
  echo "D1 mode ($config): local D1 in .wrangler/state, ${applied:-no} new migrations applied"
fi

# exec: wrangler takes this process's place, so a stop sent to npm reaches it (and it stops workerd).
exec wrangler dev --var FENCELEASE_AUTH:off "$@"
