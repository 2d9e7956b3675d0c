# Sourced by the bench scripts (run.sh, pressure.sh) from the repository root: builds the library
# and the bench module unless BENCH_SKIP_BUILD is set, then sets $classpath to this checkout's
# classes and library jar (not whatever another checkout last installed into ~/.m2) plus the
# bench module's runtime dependencies.
if [ -z "${BENCH_SKIP_BUILD:-}" ]; then
    echo "building the library and the bench module..." >&2
    mvn -B -q install -DskipTests
    mvn -B -q -f examples/pom.xml -pl :benchmarks -am package dependency:build-classpath \
        -DskipTests -Dmdep.outputFile=target/classpath.txt -Dmdep.includeScope=runtime
fi
library_jar="$(ls "$PWD"/target/reactive-workqueue-*.jar | grep -v -e sources -e javadoc | head -n 1)"
classpath="$(tr ':' '\n' < benchmarks/target/classpath.txt \
    | grep -v '/io/workqueue/reactive-workqueue/' | paste -sd: -)"
classpath="$PWD/benchmarks/target/classes:$library_jar:$classpath"
