#!/usr/bin/env bash
# The picture docs/images/trace-one-item.png: the spans of one tile, from its HTTP request to its
# handler, from a real run of examples/webflux with Spring Boot's OpenTelemetry tracing exporting to
# memory (TracePicture, test-scope code that no test command runs), drawn as a time line in HTML and
# screenshotted with headless Chromium.
#
#   benchmarks/trace-picture.sh                 # → docs/images/trace-one-item.png
#   benchmarks/trace-picture.sh /tmp/trace.png
#
# Uses the local PostgreSQL ($PGHOST:$PGPORT, default 127.0.0.1:5432, user postgres, trust) and
# recreates the database $TRACE_DATABASE (default "trace_picture"), so the tile queue holds nothing
# but the one tile. Needs chromium (Debian: apt-get install chromium). Maven options (a private
# -Dmaven.repo.local, say) go in MAVEN_OPTS. Set BENCH_SKIP_BUILD to reuse the last build.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
png="$(realpath -m "${1:-docs/images/trace-one-item.png}")"
export PGHOST="${PGHOST:-127.0.0.1}" PGPORT="${PGPORT:-5432}" PGUSER="${PGUSER:-postgres}"
database="${TRACE_DATABASE:-trace_picture}"
chromium="$(command -v chromium || command -v chromium-browser || true)"
if [ -z "$chromium" ]; then
    echo "chromium is not installed (Debian: apt-get install chromium)" >&2
    exit 1
fi
webflux=examples/webflux
if [ -z "${BENCH_SKIP_BUILD:-}" ]; then
    echo "building the library, the starter and the webflux example's test classes..." >&2
    mvn -B -q -f modules/pom.xml install -DskipTests
    mvn -B -q -f examples/pom.xml -pl webflux -am test-compile dependency:build-classpath -DskipTests \
        -Dmdep.outputFile=target/test-classpath.txt -Dmdep.includeScope=test
fi
dropdb --if-exists "$database"
createdb "$database"
html="$repo/$webflux/target/trace-one-item.html"
WORKQUEUE_R2DBC_URL="r2dbc:postgresql://$PGUSER@$PGHOST:$PGPORT/$database" \
    java -Xmx512m -cp "$webflux/target/test-classes:$webflux/target/classes:$(cat $webflux/target/test-classpath.txt)" \
    io.workqueue.examples.webflux.TracePicture "$html"
# The page states its own size (an SVG of fixed width, as tall as its rows).
size="$(sed -n "s/.*<svg xmlns='http:\/\/www.w3.org\/2000\/svg' width='\([0-9]*\)' height='\([0-9]*\)'.*/\1,\2/p" "$html")"
mkdir -p "$(dirname "$png")"
"$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size="$size" \
    --screenshot="$png" "file://$html" 2>/dev/null
echo "wrote $png ($size)"
