# Sourced by the bench scripts that compare this checkout's library with an earlier version of it
# (observation-cost.sh, drain-since.sh). build_baseline REV sets baseline_rev (REV, short) and
# baseline_jar: the library's own sources at that revision, exported (not checked out, so this
# checkout and its worktrees are left alone) into $TMPDIR and packaged once; later runs reuse the
# jar. Maven options (a private -Dmaven.repo.local, say) reach the build through MAVEN_OPTS.
build_baseline() {
    baseline_rev="$(git rev-parse --short "$1^{commit}")"
    local dir="${TMPDIR:-/tmp}/reactive-workqueue-baseline-$baseline_rev"
    if ! ls "$dir"/target/reactive-workqueue-*.jar >/dev/null 2>&1; then
        echo "building the baseline library at $baseline_rev in $dir..." >&2
        rm -rf "$dir"
        mkdir -p "$dir"
        # What the library's own build reads, as far as the revision has it.
        # shellcheck disable=SC2046
        git archive "$baseline_rev" $(git ls-tree --name-only "$baseline_rev" -- .mvn pom.xml src sql) \
            | tar -x -C "$dir"
        (cd "$dir" && mvn -B -q -DskipTests -DskipITs -Dmaven.javadoc.skip package)
    fi
    baseline_jar="$(ls "$dir"/target/reactive-workqueue-*.jar | grep -v -e sources -e javadoc | head -n 1)"
}
