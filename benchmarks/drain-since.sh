#!/usr/bin/env bash
# What upgrading from an earlier commit does to the process() drain: the library at REV (its
# defaults) against this checkout's default (handlers on the worker's own pool) and this checkout
# with handlers on the driver's threads, in one run. Each variant and round runs in a JVM of its
# own, since two versions of the library cannot share one; the order rotates from round to round.
# Issue 26's measure: REV a01961f is the last main whose process() called handlers on the
# driver's threads. Results go to docs/benchmarks/handler-scheduler/since-REV/.
#
#   benchmarks/drain-since.sh a01961f                      # cells 4x100,16x10,4x1, 7 rounds, 200,000 keys per run
#   benchmarks/drain-since.sh a01961f --rounds 1 --n 20000 --cells 4x1 --out /tmp/since
#
# REV's library is exported with `git archive` into benchmarks/target/since-REV/ and built there
# (once). Uses the local PostgreSQL ($PGHOST:$PGPORT, default 127.0.0.1:5432, user postgres, trust)
# and the database $BENCH_DATABASE (default "bench"; created if missing), whose queue tables it
# drops before each JVM. Never run by `mvn verify`.
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
rev="$(git rev-parse --short "$1^{commit}")"
shift
rounds=7 cells=4x100,16x10,4x1 n=200000 seconds=6 warmup=8
out="$repo/docs/benchmarks/handler-scheduler/since-$rev"
command="benchmarks/drain-since.sh $rev${*:+ $*}"
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds="$2" ;;
        --cells) cells="$2" ;;
        --n) n="$2" ;;
        --drain-seconds) seconds="$2" ;;
        --warmup) warmup="$2" ;;
        --out) out="$(mkdir -p "$2" && cd "$2" && pwd)" ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
    shift 2
done

# shellcheck source=database.sh
source benchmarks/database.sh
ensure_database "$database"
# shellcheck source=classpath.sh
source benchmarks/classpath.sh

baseline_dir="$repo/benchmarks/target/since-$rev"
baseline_jar="$(ls "$baseline_dir"/target/reactive-workqueue-*.jar 2>/dev/null | grep -v -e sources -e javadoc | head -n 1 || true)"
if [ -z "$baseline_jar" ]; then
    echo "building the library at $rev in $baseline_dir..." >&2
    rm -rf "$baseline_dir"
    mkdir -p "$baseline_dir"
    git archive "$rev" | tar -x -C "$baseline_dir"
    (cd "$baseline_dir" && mvn -B -q package -DskipTests -DskipITs -Dmaven.javadoc.skip)
    baseline_jar="$(ls "$baseline_dir"/target/reactive-workqueue-*.jar | grep -v -e sources -e javadoc | head -n 1)"
fi
# This checkout's bench classes over the earlier jar: the drain's library modes use only API both have.
baseline_classpath="${classpath/$library_jar/$baseline_jar}"

mkdir -p "$out"
rm -f "$out/runs.jsonl"
variants=(baseline pool driver)
for round in $(seq 1 "$rounds"); do
    for i in 0 1 2; do
        variant="${variants[$(( (round - 1 + i) % 3 ))]}"
        cp="$classpath"
        if [ "$variant" = baseline ]; then cp="$baseline_classpath"; fi
        # shellcheck disable=SC2086
        java -Xms512m -Xmx2g -Djava.awt.headless=true -Dbench.repo="$repo" -Dbench.database="$database" \
            ${BENCH_JAVA_OPTS:-} -cp "$cp" io.workqueue.examples.bench.DrainSince measure --variant "$variant" \
            --round "$round" --cells "$cells" --n "$n" --drain-seconds "$seconds" --warmup "$warmup" --out "$out"
    done
done
exec java -Xms512m -Xmx2g -Djava.awt.headless=true -Dbench.repo="$repo" -Dbench.database="$database" -cp "$classpath" \
    io.workqueue.examples.bench.DrainSince report --baseline "$rev" --command "$command" --out "$out"
