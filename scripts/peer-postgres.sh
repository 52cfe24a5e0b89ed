#!/usr/bin/env bash
# A private PostgreSQL server for the test suite and the benchmarks, on a
# loopback port, with its data in DIR. Installs Debian's postgresql when no
# server binaries are found. initdb and postgres refuse to run as root, so
# as root the server runs as the `postgres` user and DIR is made its own.
#
# Usage: scripts/peer-postgres.sh start DIR   # prints the URL, also in DIR/url
#        scripts/peer-postgres.sh stop DIR    # stops it and removes DIR
#        scripts/peer-postgres.sh crash DIR   # kills it at once: WAL it had
#                                             # not yet written out is lost
#        scripts/peer-postgres.sh restart DIR # starts it again on its data
# Then:  export GATE_TEST_POSTGRES=$(cat DIR/url)
# PEER_POSTGRES_SETTINGS="name=value ..." adds server settings at start.
set -euo pipefail

case "${1:-}" in
start | stop | crash | restart) ;;
*) set -- usage ;;
esac
if [ "$#" -ne 2 ]; then
    echo "usage: $0 start|stop|crash|restart DIR" >&2
    exit 2
fi
cmd=$1
dir=$2

log() { printf '==> %s\n' "$*" >&2; }

is_root() { [ "$(id -u)" = 0 ]; }

as_root() { if is_root; then "$@"; else sudo "$@"; fi; }

# Server programs run as the data directory's owner.
as_owner() { if is_root; then runuser -u postgres -- "$@"; else "$@"; fi; }

# The newest installed server's bin folder (Debian keeps them per version).
bindir() {
    local d
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
            echo "$d"
            return 0
        fi
    done
    if command -v pg_ctl >/dev/null && command -v initdb >/dev/null; then
        dirname "$(command -v pg_ctl)"
        return 0
    fi
    return 1
}

# True when something answers on the loopback port.
in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start() {
    local bin
    if ! bin=$(bindir); then
        log "installing PostgreSQL (Debian's postgresql)"
        as_root apt-get update -qq
        DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq postgresql >/dev/null
        bin=$(bindir)
    fi
    if is_root && ! id postgres >/dev/null 2>&1; then
        useradd --system --user-group --home-dir /var/lib/postgresql --shell /bin/sh postgres
    fi
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    # Already running from an earlier start: reuse it.
    if [ -f "$dir/url" ] && as_owner "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
        cat "$dir/url"
        return 0
    fi
    rm -rf "$dir/data" "$dir/sock" "$dir/url"
    mkdir -p "$dir/data" "$dir/sock"
    if is_root; then
        chown -R postgres: "$dir"
        if ! as_owner test -w "$dir/data"; then
            echo "the postgres user cannot reach $dir: give a DIR whose parent folders it may enter (under /tmp, say)" >&2
            exit 1
        fi
    fi
    # Trust is safe here: the server listens on loopback only, for this suite.
    as_owner "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-sync \
        >"$dir/initdb.log" 2>&1 || {
        cat "$dir/initdb.log" >&2
        exit 1
    }
    local port tries=0 settings="" setting
    for setting in ${PEER_POSTGRES_SETTINGS:-}; do
        settings="$settings -c $setting"
    done
    while :; do
        port=$((20000 + RANDOM % 40000))
        in_use "$port" && continue
        echo "-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories=$dir/sock -c max_connections=400$settings" >"$dir/options"
        if serve "$bin"; then
            break
        fi
        tries=$((tries + 1))
        if [ "$tries" -ge 5 ]; then
            cat "$dir/server.log" >&2
            exit 1
        fi
    done
    local url="postgres://postgres@127.0.0.1:$port/postgres"
    echo "$url" >"$dir/url"
    echo "$url"
}

# Starts the server in DIR/data with the options of its first start.
serve() {
    as_owner "$1/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "$(cat "$dir/options")" start >/dev/null
}

# An immediate shutdown: the server stops at once, without a checkpoint or
# a flush, and replays its WAL when it starts again.
crash() {
    local bin
    bin=$(bindir)
    as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null
}

restart() {
    local bin
    bin=$(bindir)
    dir=$(cd "$dir" && pwd)
    serve "$bin" || {
        cat "$dir/server.log" >&2
        exit 1
    }
    cat "$dir/url"
}

stop() {
    [ -d "$dir" ] || return 0
    local bin
    if [ -d "$dir/data" ] && bin=$(bindir); then
        as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
}

"$cmd"
