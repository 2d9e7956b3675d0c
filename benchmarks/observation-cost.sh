#!/usr/bin/env bash
# What observations cost the drain: process() with the library as it was before observations
# (built here from the git revision $BENCH_BASELINE_REV, default a32a8d3, the commit before they
# merged), beside today's library with no observation registry, with ObservationRegistry.NOOP and
# with a real registry feeding a meter handler, one JVM per variant and round, in one run. Results
# go to docs/benchmarks/observations/.
#
#   benchmarks/observation-cost.sh                      # cells 4x100,16x10, 5 rounds, 100,000 keys per run, 12 s cap
#   benchmarks/observation-cost.sh --rounds 1 --n 20000 --cells 4x100 --out /tmp/oc
#
# Uses the local PostgreSQL ($PGHOST:$PGPORT, default 127.0.0.1:5432, user postgres, trust) and the
# database $BENCH_DATABASE (default "bench"; created if missing), whose queue tables it drops first.
# Maven options (a private -Dmaven.repo.local, say) reach both builds through MAVEN_OPTS.
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

# shellcheck source=baseline.sh
source benchmarks/baseline.sh
build_baseline "${BENCH_BASELINE_REV:-a32a8d3}"

# The parent only starts the JVMs that drain and reads what they write: a small heap is enough.
# shellcheck disable=SC2086
exec java -Xmx256m -Djava.awt.headless=true -Dbench.repo="$repo" -Dbench.database="$database" \
    -Dbench.library.jar="$library_jar" -Dbench.baseline.jar="$baseline_jar" -Dbench.baseline.rev="$baseline_rev" \
    ${BENCH_JAVA_OPTS:-} -cp "$classpath" io.workqueue.examples.bench.ObservationCost "$@"
