#!/usr/bin/env bash
# Start a throwaway PostgreSQL server for the storage tests and print its URL.
# Installs Debian's postgresql package when the server binaries are missing.
# Usage: eval "$(scripts/test-postgres.sh start)" ; ... ; scripts/test-postgres.sh stop
set -euo pipefail
port="${TWENTYONE_TEST_POSTGRES_PORT:-54329}"
dir="${TWENTYONE_TEST_POSTGRES_DIR:-/tmp/twentyone-test-postgres}"

bindir() {
  local found
  found=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  [ -n "$found" ] && [ -x "$found/initdb" ] && echo "$found"
}

case "${1:-start}" in
  start)
    if [ -z "$(bindir)" ]; then
      echo "installing postgresql (Debian package)" >&2
      apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
    fi
    bin=$(bindir)
    id -u postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
    if [ -f "$dir/postmaster.pid" ]; then
      runuser -u postgres -- "$bin/pg_ctl" -D "$dir" stop -m immediate >&2 || true
    fi
    rm -rf "$dir" && mkdir -p "$dir" && chown postgres "$dir"
    runuser -u postgres -- "$bin/initdb" -D "$dir" -A trust -U postgres >/dev/null
    runuser -u postgres -- "$bin/pg_ctl" -D "$dir" -l "$dir/server.log" -w \
      -o "-p $port -k /tmp -c listen_addresses=127.0.0.1 -c fsync=off" start >&2
    echo "export TWENTYONE_TEST_POSTGRES_URL=postgresql+psycopg://postgres@127.0.0.1:$port/postgres"
    ;;
  stop)
    bin=$(bindir)
    [ -n "$bin" ] && [ -f "$dir/postmaster.pid" ] && runuser -u postgres -- "$bin/pg_ctl" -D "$dir" stop -m fast >&2
    ;;
esac
