#!/usr/bin/env bash
# The evidence verifier alone: `gate-evidence` built without its default
# `stores` feature must compile and must hold no database, object-store or
# HTTP client anywhere in its dependency tree, so an auditor's build of it
# pulls none of them.
set -euo pipefail
cd "$(dirname "$0")/.."

forbidden=(rusqlite libsqlite3-sys tokio-postgres postgres-protocol deadpool-postgres
  object_store reqwest hyper h2 rustls tokio)

crates() {
  cargo tree --locked -p gate-evidence -e normal --prefix none "$@" | awk '{print $1}' | sort -u
}

cargo check --locked -q -p gate-evidence --no-default-features --lib

with=$(crates)
alone=$(crates --no-default-features)
status=0
for c in "${forbidden[@]}"; do
  if grep -qx "$c" <<<"$alone"; then
    echo "gate-evidence without its stores still depends on $c:" >&2
    cargo tree --locked -p gate-evidence -e normal --no-default-features -i "$c" >&2 || true
    status=1
  fi
done
# The names above are the ones the stores really pull in: a renamed crate
# would otherwise pass unseen.
for c in rusqlite tokio-postgres object_store; do
  if ! grep -qx "$c" <<<"$with"; then
    echo "gate-evidence with its stores no longer depends on $c: update this check" >&2
    status=1
  fi
done
[ "$status" = 0 ] && echo "gate-evidence without its stores: $(wc -l <<<"$alone") crates, none of them a store or a client"
exit "$status"
