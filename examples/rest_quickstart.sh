#!/usr/bin/env bash
# The REST binding with curl: write entries, read one back, query, list, delete.
# Uses the server at $A2M_URL when set; otherwise starts `a2m-server serve` on a free
# loopback port with a throw-away store, and stops it on exit:
#
#     bash examples/rest_quickstart.sh
set -euo pipefail

PYTHON=${PYTHON:-python3}
if [ -z "${A2M_URL:-}" ]; then
    workdir=$(mktemp -d)
    port=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "$PYTHON" -m a2m_server serve --db "$workdir/rest.db" --port "$port" --log-level warning &
    server=$!
    trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -rf "$workdir"' EXIT
    A2M_URL="http://127.0.0.1:$port/"
    for _ in $(seq 100); do
        curl -fs "${A2M_URL}a2m/v1/memory:describe" >/dev/null && break
        sleep 0.1
    done
fi
api="${A2M_URL%/}/a2m/v1"
show() { printf '\n$ %s\n' "$*"; "$@"; echo; }

# Entries live at (namespace, key); writing the same key again replaces the entry.
show curl -fsS -X POST "$api/acme/ops/entries" -H 'content-type: application/json' \
    -d '{"key": "deploy-key", "type": "semantic", "value": "The deploy key rotates every 90 days."}'
show curl -fsS -X POST "$api/acme/people/entries" -H 'content-type: application/json' \
    -d '{"key": "ada", "type": "semantic", "value": {"name": "Ada", "style": "short answers"}}'
show curl -fsS "$api/acme/ops/entries/deploy-key"
# A text query searches the namespace and, with recursive, the ones below it.
show curl -fsS -X POST "$api/acme/query" -H 'content-type: application/json' \
    -d '{"query": "when does the deploy key rotate", "recursive": true, "top_k": 1}'
show curl -fsS "$api/acme/people/entries?limit=10"
show curl -fsS -o /dev/null -w '%{http_code}\n' -X DELETE "$api/acme/ops/entries/deploy-key"
# Every A2M method is also a route: memory:{method} with its params as the body.
show curl -fsS -X POST "$api/memory:recall" -H 'content-type: application/json' \
    -d '{"query": "Ada", "limit": 1}'
