#!/usr/bin/env bash
# What the web console's reads and actions cost at a million items: every WorkQueueAdmin call a
# console view makes, timed, and each statement's plan with buffers. Results go to
# docs/benchmarks/console/ (README.md, plans.md).
#
#   benchmarks/console.sh                          # 1,000,000 pending + 200,000 completed, 30 samples
#   benchmarks/console.sh --items 200000 --samples 10
#
# Uses the local PostgreSQL ($PGHOST:$PGPORT, default 127.0.0.1:5432) and its database "bench".
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
export PGHOST="${PGHOST:-127.0.0.1}" PGPORT="${PGPORT:-5432}" PGUSER="${PGUSER:-postgres}"
# shellcheck source=database.sh
source benchmarks/database.sh
ensure_database bench
# shellcheck source=classpath.sh
source benchmarks/classpath.sh
exec java -Xms512m -Xmx2g -Djava.awt.headless=true -Dbench.repo="$repo" \
    -cp "$classpath" io.workqueue.examples.bench.ConsoleBench "$@"
