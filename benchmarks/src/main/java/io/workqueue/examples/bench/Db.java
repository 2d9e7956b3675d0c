package io.workqueue.examples.bench;

import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.pool.ConnectionPoolConfiguration;
import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactories;
import io.r2dbc.spi.ConnectionFactory;
import io.r2dbc.spi.ConnectionFactoryOptions;
import io.r2dbc.spi.Readable;
import io.r2dbc.spi.Result;
import io.workqueue.migrations.WorkQueueMigrations;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The benchmark database: the local PostgreSQL ({@code PGHOST}, {@code PGPORT}, {@code PGUSER},
 * default 127.0.0.1:5432 as postgres, trust), database {@code bench} (run.sh creates it). Small
 * blocking helpers for setup and measurement queries; the measured paths never use them.
 */
final class Db {
    final String host;
    final int port;
    final String user;
    final String database;
    private final ConnectionFactory plain;

    Db(String host, int port, String user, String database) {
        this.host = host;
        this.port = port;
        this.user = user;
        this.database = database;
        this.plain = factory("bench-harness");
    }

    static Db fromEnvironment(String database) {
        String host = env("PGHOST", "127.0.0.1");
        int port = Integer.parseInt(env("PGPORT", "5432"));
        String user = env("PGUSER", "postgres");
        return new Db(host, port, user, database);
    }

    private static String env(String name, String fallback) {
        String value = System.getenv(name);
        return value == null || value.isBlank() ? fallback : value;
    }

    /**
     * The database's R2DBC URL, plus the driver options in {@code BENCH_R2DBC_OPTIONS} if set (a
     * query string, e.g. {@code preparedStatementCacheQueries=0} to plan every statement for its
     * own arguments).
     */
    String url() {
        String options = driverOptions();
        return baseUrl() + (options.isEmpty() ? "" : "?" + options);
    }

    /** The driver options {@code BENCH_R2DBC_OPTIONS} adds to {@link #url()}; empty when none. */
    static String driverOptions() {
        return env("BENCH_R2DBC_OPTIONS", "");
    }

    /** The database's R2DBC URL without options, for a benchmark that sets its own. */
    String baseUrl() {
        return "r2dbc:postgresql://" + user + "@" + host + ":" + port + "/" + database;
    }

    /** A non-pooled factory whose sessions carry {@code applicationName}, so pg_stat_activity can tell them apart. */
    ConnectionFactory factory(String applicationName) {
        return ConnectionFactories.get(ConnectionFactoryOptions.parse(url()).mutate()
                .option(io.r2dbc.postgresql.PostgresqlConnectionFactoryProvider.APPLICATION_NAME, applicationName)
                .build());
    }

    /** A pool of exactly {@code size} connections, opened before it is returned. */
    ConnectionPool pool(String applicationName, int size) {
        ConnectionPool pool = new ConnectionPool(ConnectionPoolConfiguration.builder(factory(applicationName))
                .initialSize(size)
                .maxSize(size)
                .maxAcquireTime(Duration.ofSeconds(60))
                .build());
        pool.warmup().block();
        return pool;
    }

    /** Disposes the pool and waits until its sessions have left the server (their stats are then flushed). */
    void dispose(ConnectionPool pool, String applicationName) {
        pool.disposeLater().block();
        awaitGone(applicationName);
    }

    /** Waits (up to 10 s) until no session named {@code applicationName} is left on the server. */
    void awaitGone(String applicationName) {
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (System.nanoTime() < deadline
                && queryLong("SELECT count(*) FROM pg_stat_activity WHERE application_name = '" + applicationName + "'") > 0) {
            sleep(20);
        }
    }

    /** Runs statements (no parameters, simple protocol, autocommit: VACUUM works). */
    void exec(String... statements) {
        Mono.usingWhen(Mono.from(plain.create()), connection -> Flux.fromArray(statements)
                        .concatMap(sql -> Flux.from(connection.createStatement(sql).execute())
                                .concatMap(Result::getRowsUpdated))
                        .then(),
                Connection::close)
                .block();
    }

    <T> List<T> query(String sql, Function<Readable, T> mapper) {
        return Mono.usingWhen(Mono.from(plain.create()), connection -> Flux.from(connection.createStatement(sql).execute())
                        .concatMap(result -> result.map(mapper::apply))
                        .collectList(),
                Connection::close)
                .blockOptional().orElseGet(ArrayList::new);
    }

    long queryLong(String sql) {
        List<Long> values = query(sql, row -> {
            Number n = row.get(0, Number.class);
            return n == null ? 0L : n.longValue();
        });
        return values.isEmpty() ? 0L : values.get(0);
    }

    String queryString(String sql) {
        List<String> values = query(sql, row -> String.valueOf(row.get(0)));
        return values.isEmpty() ? "" : values.get(0);
    }

    /**
     * Drops every queue table an earlier run left in the benchmark database, so each suite measures
     * tables exactly as this checkout's DDL creates them (a table kept from an older DDL keeps its
     * old storage parameters, such as fillfactor, and its bloat).
     */
    void dropQueueTables() {
        List<String> tables = query("SELECT quote_ident(c.relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                + " WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname LIKE '%work\\_queue\\_items'",
                row -> row.get(0, String.class));
        for (String table : tables) {
            exec("DROP TABLE " + table);
        }
        if (!tables.isEmpty()) {
            System.out.println("dropped the queue tables of earlier runs: " + String.join(", ", tables));
        }
    }

    /** Creates (idempotently) the queue table for {@code prefix}. */
    void migrate(String prefix) {
        WorkQueueMigrations.apply(plain, prefix).block();
    }

    /**
     * Empties the table, inserts {@code n} ready keys ({@code k00000001}...) of {@code queue}, and
     * runs VACUUM ANALYZE, so every run starts from the same physical state.
     */
    void preload(String prefix, String queue, int n) {
        preload(prefix, List.of(queue), n);
    }

    /**
     * Empties {@code prefix}'s table and enqueues the same {@code perQueue} keys in each of
     * {@code queues}, then VACUUM ANALYZEs it.
     */
    void preload(String prefix, List<String> queues, int perQueue) {
        String table = WorkQueueMigrations.tableName(prefix);
        exec("TRUNCATE " + table,
                "INSERT INTO " + table + " (queue_name, item_key) SELECT q, 'k' || lpad(g::text, 8, '0')"
                        + " FROM unnest(" + textArray(queues) + ") AS q, generate_series(1, " + perQueue + ") g",
                "VACUUM ANALYZE " + table);
    }

    /** A text[] literal of the benchmark's own names (letters, digits, '-', '_' only: checked). */
    static String textArray(List<String> names) {
        for (String name : names) {
            if (!name.matches("[A-Za-z0-9_-]+")) {
                throw new IllegalArgumentException("not a benchmark name: " + name);
            }
        }
        return "ARRAY['" + String.join("', '", names) + "']::text[]";
    }

    /** Rows updated in {@code table} so far, and how many of those updates were HOT: {n_tup_upd, n_tup_hot_upd}. */
    long[] updates(String table) {
        List<long[]> rows = query("SELECT coalesce(sum(n_tup_upd), 0)::int8, coalesce(sum(n_tup_hot_upd), 0)::int8"
                + " FROM pg_stat_user_tables WHERE relname = '" + table + "'",
                row -> new long[] {row.get(0, Long.class), row.get(1, Long.class)});
        return rows.isEmpty() ? new long[2] : rows.get(0);
    }

    /** Transactions committed in this database so far (pg_stat_database, as flushed by the backends). */
    long xactCommit() {
        return queryLong("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()");
    }

    static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
