# Sourced by the benchmark scripts. ensure_database NAME creates the database NAME on the server
# PGHOST/PGPORT/PGUSER name unless it is there already.
ensure_database() {
    if [ "$(psql -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$1'")" != "1" ]; then
        createdb "$1"
    fi
}
