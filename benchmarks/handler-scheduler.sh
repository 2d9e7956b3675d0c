#!/usr/bin/env bash
# What running handlers off the driver's threads costs the drain: process() with the default
# handler scheduler (the worker's own pool) beside process() with Schedulers.immediate() (the
# driver's threads), alternating, in one run. Results go to docs/benchmarks/handler-scheduler/.
#
#   benchmarks/handler-scheduler.sh                      # cells 4x100,16x10,4x1, 5 rounds, 200,000 keys per run
#   benchmarks/handler-scheduler.sh --rounds 1 --n 20000 --cells 4x100 --out /tmp/hs
#
# Uses the local PostgreSQL ($PGHOST:$PGPORT, default 127.0.0.1:5432, user postgres, trust) and the
# database $BENCH_DATABASE (default "bench"; created if missing), whose queue tables it drops first.
# Never run by `mvn verify`.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
export PGHOST="${PGHOST:-127.0.0.1}" PGPORT="${PGPORT:-5432}" PGUSER="${PGUSER:-postgres}"
database="${BENCH_DATABASE:-bench}"
# shellcheck source=database.sh
source benchmarks/database.sh
ensure_database "$database"
# shellcheck source=classpath.sh
source benchmarks/classpath.sh
# shellcheck disable=SC2086
exec java -Xms512m -Xmx2g -Djava.awt.headless=true -Dbench.repo="$repo" -Dbench.database="$database" \
    ${BENCH_JAVA_OPTS:-} -cp "$classpath" io.workqueue.examples.bench.HandlerThreads "$@"
