#!/usr/bin/env bash
# Issue 23's benchmark: what stats() and the health check readyLongerThan(5 min) cost with 100,000
# pending items beside a day of completed history, against the stats read they replaced, on one
# table grown from a small history to a large one. Builds the table with the library's DDL, times
# the three reads interleaved, and records each one's buffers (EXPLAIN (ANALYZE, BUFFERS)).
#
#   benchmarks/stats-history.sh           # 1,000,000 then 20,000,000 completed: docs/benchmarks/stats-history/
#   benchmarks/stats-history.sh --quick   # 200,000 then 2,000,000 (about 3 min): benchmarks/target/stats-history-quick/
#   benchmarks/stats-history.sh --help    # every option
#
# Uses the local PostgreSQL ($PGHOST:$PGPORT, default 127.0.0.1:5432, user postgres, trust) and its
# database "bench", created if missing. The full run needs about 6 GB of disk while it runs; the
# table is dropped at the end (--keep leaves it). Never run by `mvn verify`.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
export PGHOST="${PGHOST:-127.0.0.1}" PGPORT="${PGPORT:-5432}" PGUSER="${PGUSER:-postgres}"

for arg in "$@"; do
    if [ "$arg" = "--help" ] || [ "$arg" = "-h" ]; then help=1; fi
done
# shellcheck source=database.sh
source benchmarks/database.sh
if [ -z "${help:-}" ]; then
    ensure_database bench
fi

# shellcheck source=classpath.sh
source benchmarks/classpath.sh
exec java -Xms512m -Xmx2g -Djava.awt.headless=true -Dbench.repo="$repo" \
    -cp "$classpath" io.workqueue.examples.bench.StatsHistory "$@"
