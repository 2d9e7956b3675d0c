#!/usr/bin/env bash
# What PgBouncer costs the queue: the same enqueue and drain direct and through PgBouncer in
# transaction pooling mode, in one run. Results go to docs/benchmarks/pooler/README.md.
#
#   benchmarks/pooler.sh                 # 100,000 keys per path and round, 3 rounds
#   benchmarks/pooler.sh --keys 20000 --rounds 1
#
# Uses the local PostgreSQL ($PGHOST:$PGPORT, default 127.0.0.1:5432) and its database "bench", and
# starts a PgBouncer for it on $PGBOUNCER_PORT (default 6434) with .ci/start-pgbouncer.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
export PGHOST="${PGHOST:-127.0.0.1}" PGPORT="${PGPORT:-5432}" PGUSER="${PGUSER:-postgres}"
export PGBOUNCER_PORT="${PGBOUNCER_PORT:-6434}"
# shellcheck source=database.sh
source benchmarks/database.sh
ensure_database bench
bash .ci/start-pgbouncer "$PGBOUNCER_PORT" "$PGPORT" bench
# shellcheck source=classpath.sh
source benchmarks/classpath.sh
exec java -Xms512m -Xmx2g -Djava.awt.headless=true -Dbench.repo="$repo" \
    -cp "$classpath" io.workqueue.examples.bench.Pooler "$@"
