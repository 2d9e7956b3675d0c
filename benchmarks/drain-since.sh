#!/usr/bin/env bash
# What upgrading from an earlier commit does to the process() drain: the library at REV (its
# defaults) against this checkout's default (handlers on the worker's own pool) and this checkout
# with handlers on the driver's threads, one JVM per variant and round, in one run. Issue 26's
# measure: a01961f is the last main whose process() called handlers on the driver's threads.
# Results go to docs/benchmarks/handler-scheduler/since-REV/.
#
#   benchmarks/drain-since.sh a01961f                      # cells 4x100,16x10,4x1, 7 rounds, 200,000 keys per run
#   benchmarks/drain-since.sh a01961f --rounds 1 --n 20000 --cells 4x1 --warmup 2 --out /tmp/since
#
# Uses the local PostgreSQL ($PGHOST:$PGPORT, default 127.0.0.1:5432, user postgres, trust) and the
# database $BENCH_DATABASE (default "bench"; created if missing), whose queue tables each JVM drops
# first. Maven options reach both builds through MAVEN_OPTS. Never run by `mvn verify`.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
export PGHOST="${PGHOST:-127.0.0.1}" PGPORT="${PGPORT:-5432}" PGUSER="${PGUSER:-postgres}"
database="${BENCH_DATABASE:-bench}"
if [ $# -lt 1 ] || [ "${1#-}" != "$1" ]; then
    echo "usage: benchmarks/drain-since.sh REV [--rounds N] [--cells 4x100,16x10,4x1] [--n N]" \
        "[--drain-seconds S] [--warmup S] [--out DIR]" >&2
    exit 2
fi
# shellcheck source=database.sh
source benchmarks/database.sh
ensure_database "$database"
# shellcheck source=classpath.sh
source benchmarks/classpath.sh
# shellcheck source=baseline.sh
source benchmarks/baseline.sh
build_baseline "$1"
shift

# The parent only starts the JVMs that drain and reads what they write: a small heap is enough.
# shellcheck disable=SC2086
exec java -Xmx256m -Djava.awt.headless=true -Dbench.repo="$repo" -Dbench.database="$database" \
    -Dbench.library.jar="$library_jar" -Dbench.baseline.jar="$baseline_jar" -Dbench.baseline.rev="$baseline_rev" \
    ${BENCH_JAVA_OPTS:-} -cp "$classpath" io.workqueue.examples.bench.DrainSince "$@"
