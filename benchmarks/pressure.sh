#!/usr/bin/env bash
# The pressure suite of the vacuum-proof storage issue, in one command:
#
#   benchmarks/pressure.sh     # 5,000 keys/s; phases clean:60,pinned:180,recovery:90,readers:60,recovery:90
#   benchmarks/pressure.sh --rate 10000 --phases clean:60,pinned:600,recovery:120 --out docs/benchmarks/pressure-10k
#   benchmarks/pressure.sh --overload-rate 24000 --phases clean:30,overload:60,recovery:120 --out docs/benchmarks/pressure-overload
#   benchmarks/pressure.sh --phases clean:60,crash:60,pinned:300,crash-pinned:60,recovery:60 --out docs/benchmarks/pressure-crash
#
# Phases: clean, pinned (an idle transaction holds the horizon), readers (four overlapping
# REPEATABLE READ snapshots), overload (the producer offers --overload-rate, by default 3x --rate;
# 1.5x the drain ceiling run.sh measures overloads the fleet), recovery, crash (as it starts, a fleet
# member claims up to --rate items with a 5 s lease and dies holding them; how long after their
# lease ended the surviving workers hand them out again), crash-pinned (the same while the horizon
# is held: by the pinned phase just before, whose transaction it keeps, or by one it opens). At
# each phase end it EXPLAIN ANALYZEs the claim from the head, the cursor claim and the look.
#
# Vacuum behaviour is the point, so it runs on a PostgreSQL cluster of its own with the server's
# default settings (autovacuum on): the machine's main server may run with autovacuum off, and
# numbers about dead tuples taken there describe nothing real. The cluster is created once
# ($PRESSURE_VERSION/pressure on port $PRESSURE_PORT, default 5441, trust auth) and started if
# needed; it is left running. Results (README.md, pressure.csv, pressure.png) go to --out, by
# default docs/benchmarks/pressure. Needs Java 17, Maven and Debian's postgresql-common tools.
# PRESSURE_JAVA_OPTS adds JVM options (a profiler, say); BENCH_R2DBC_OPTIONS adds driver options to the
# URL (e.g. preparedStatementCacheQueries=0).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
version="${PRESSURE_VERSION:-$(ls /etc/postgresql | head -n 1)}"
port="${PRESSURE_PORT:-5441}"

if [ ! -d "/etc/postgresql/$version/pressure" ]; then
    echo "creating the cluster $version/pressure on port $port (defaults, autovacuum on)" >&2
    pg_createcluster "$version" pressure -p "$port" -- --auth=trust >/dev/null
fi
if ! pg_isready -q -h 127.0.0.1 -p "$port"; then
    pg_ctlcluster --skip-systemctl-redirect "$version" pressure start
    for _ in $(seq 1 60); do pg_isready -q -h 127.0.0.1 -p "$port" && break; sleep 1; done
    pg_isready -h 127.0.0.1 -p "$port"
fi
export PGHOST=127.0.0.1 PGPORT="$port" PGUSER=postgres
# shellcheck source=database.sh
source benchmarks/database.sh
ensure_database bench

# shellcheck source=classpath.sh
source benchmarks/classpath.sh
exec java -Xms512m -Xmx2g -Djava.awt.headless=true -Dbench.repo="$repo" ${PRESSURE_JAVA_OPTS:-} \
    -cp "$classpath" io.workqueue.examples.bench.Pressure "$@"
