package io.workqueue.postgres;

import io.r2dbc.spi.Connection;
import io.r2dbc.spi.Statement;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The server's plans for the library's statements, as the plan tests read them; nothing is
 * executed, except by {@link #buffersTouched}, which runs the statement to count what it read.
 */
final class Plans {

    /** Marks a parameter bound as SQL NULL of a type. */
    record Null(Class<?> type) {}

    private Plans() {
    }

    /** The plan of {@code statement} with these binds (a {@link Null} binds a typed NULL). */
    static List<String> explain(String statement, Object... binds) {
        return explained("EXPLAIN ", statement, Duration.ofSeconds(30), binds);
    }

    /** The plan of {@code statement} with these binds, in the order of its parameters. */
    static List<String> explain(SqlStatement statement, Object... binds) {
        return explain(statement.text(), binds);
    }

    /**
     * How many shared buffers {@code statement} touched (hit or read) when run with these binds,
     * from {@code EXPLAIN (ANALYZE, BUFFERS)}: a measure of its cost that, unlike a timing, does
     * not depend on the machine or on what else runs. Runs the statement, so only for reads.
     */
    static long buffersTouched(SqlStatement statement, Object... binds) {
        return buffersTouched(statement.text(), binds);
    }

    /** {@link #buffersTouched(SqlStatement, Object...)} of a statement's text. */
    static long buffersTouched(String statement, Object... binds) {
        // The top node's line counts everything beneath it, subplans included; it comes first.
        return topBuffers(explained("EXPLAIN (ANALYZE, BUFFERS) ", statement, Duration.ofSeconds(60), binds));
    }

    /**
     * {@link #buffersTouched} of the stats read as {@code StatsRead} runs it: statsCompleted, then
     * stats in the same transaction (under the settings the first made), the buffers of the
     * second; rolled back. With {@code inIndexOrder}, stats runs instead after a setting that
     * leaves the planner only the due index in its order, the plan it chose by itself on a large
     * table of one queue: what the read cost before statsCompleted steered it.
     */
    static long statsReadBuffers(Sql sql, String queue, int attemptLimit, boolean inIndexOrder) {
        return topBuffers(rolledBack(c -> Flux.from(inIndexOrder
                                ? c.createStatement("SET LOCAL enable_bitmapscan = off").execute()
                                : sql.statsCompleted.on(c).bind("queue", queue).execute())
                        .concatMap(r -> r.map((row, meta) -> 1))
                        .thenMany(Flux.from(c.createStatement("EXPLAIN (ANALYZE, BUFFERS) " + sql.stats.text())
                                .bind(0, queue).bind(1, attemptLimit).execute()))
                        .concatMap(r -> r.map((row, meta) -> row.get(0, String.class)))
                        .collectList()));
    }

    /** {@code work} in a transaction on a connection of its own, rolled back afterwards. */
    private static <T> T rolledBack(Function<Connection, Mono<T>> work) {
        return Mono.usingWhen(TestDatabase.plain().create(),
                        (Connection c) -> Mono.from(c.beginTransaction())
                                .then(work.apply(c))
                                .flatMap(result -> Mono.from(c.rollbackTransaction()).thenReturn(result)),
                        Connection::close)
                .block(Duration.ofSeconds(60));
    }

    /** The buffers the top node of an {@code EXPLAIN (ANALYZE, BUFFERS)} counts: everything beneath it. */
    private static long topBuffers(List<String> plan) {
        String top = plan.stream().filter(line -> line.trim().startsWith("Buffers: shared")).findFirst()
                .orElseThrow(() -> new AssertionError("no buffer counts in " + String.join("\n", plan)));
        long touched = 0;
        for (String kind : List.of("hit", "read")) {
            Matcher m = Pattern.compile(kind + "=(\\d+)").matcher(top);
            if (m.find()) {
                touched += Long.parseLong(m.group(1));
            }
        }
        return touched;
    }

    /** The lines {@code explain} (an EXPLAIN with its options) prints for {@code statement} with these binds. */
    private static List<String> explained(String explain, String statement, Duration within, Object... binds) {
        return Mono.usingWhen(TestDatabase.pool().create(),
                        (Connection c) -> {
                            Statement explaining = c.createStatement(explain + statement);
                            for (int i = 0; i < binds.length; i++) {
                                if (binds[i] instanceof Null n) {
                                    explaining.bindNull(i, n.type());
                                } else {
                                    explaining.bind(i, binds[i]);
                                }
                            }
                            return Flux.from(explaining.execute())
                                    .concatMap(r -> r.map((row, meta) -> row.get(0, String.class)))
                                    .collectList();
                        },
                        Connection::close)
                .block(within);
    }

    /**
     * {@link #genericPlan} run: {@code EXPLAIN ANALYZE} of the generic plan, in a transaction rolled
     * back afterwards, so a statement that writes (a claim) leaves nothing behind.
     */
    static List<String> analyzedGenericPlan(SqlStatement statement, String parameterTypes, String arguments) {
        return analyzedPlan("force_generic_plan", statement, parameterTypes, arguments);
    }

    /**
     * {@link #analyzedGenericPlan}, but planned for the arguments themselves, as the first runs of
     * a prepared statement are (and every run, while custom plans look cheaper to the planner).
     */
    static List<String> analyzedCustomPlan(SqlStatement statement, String parameterTypes, String arguments) {
        return analyzedPlan("force_custom_plan", statement, parameterTypes, arguments);
    }

    private static List<String> analyzedPlan(String planCacheMode, SqlStatement statement, String parameterTypes,
            String arguments) {
        return rolledBack(c -> Flux.just(
                        "SET LOCAL plan_cache_mode = " + planCacheMode,
                        "DO $probe$ BEGIN EXECUTE $stmt$PREPARE analyzed(" + parameterTypes + ") AS "
                                + statement.text() + "$stmt$; END $probe$")
                .concatMap(sql -> Flux.from(c.createStatement(sql).execute()).concatMap(r -> r.getRowsUpdated()))
                .thenMany(Flux.from(c.createStatement("EXPLAIN ANALYZE EXECUTE analyzed(" + arguments + ")").execute()))
                .concatMap(r -> r.map((row, meta) -> row.get(0, String.class)))
                .collectList());
    }

    /**
     * How many of {@code runs} runs of {@code statement} used the plan cache's generic plan, as
     * {@code pg_prepared_statements} counts them: prepared with SQL {@code PREPARE} under the
     * server's default plan choice and run with {@code arguments}, in a transaction rolled back
     * afterwards. The server plans the first five runs for their values, then keeps a generic
     * plan if it looks no dearer than those; otherwise it plans every run afresh.
     */
    static long genericRuns(SqlStatement statement, String parameterTypes, String arguments, int runs) {
        return rolledBack(c -> Flux.just("DO $probe$ BEGIN EXECUTE $stmt$PREPARE counted(" + parameterTypes
                                + ") AS " + statement.text() + "$stmt$; END $probe$")
                .concatWith(Flux.range(0, runs).map(i -> "EXECUTE counted(" + arguments + ")"))
                .concatMap(sql -> Flux.from(c.createStatement(sql).execute()).concatMap(r -> r.map((row, meta) -> 1)))
                .then(Mono.from(c.createStatement("SELECT generic_plans FROM pg_prepared_statements"
                        + " WHERE name = 'counted'").execute()))
                .flatMap(r -> Mono.from(r.map((row, meta) -> row.get(0, Long.class)))));
    }

    /**
     * The generic plan of {@code statement}: prepared with SQL {@code PREPARE} (so the plan cache
     * applies from the first run), planned under {@code plan_cache_mode = force_generic_plan}, and
     * explained for the literal arguments {@code arguments}.
     */
    static List<String> genericPlan(SqlStatement statement, String parameterTypes, String arguments) {
        return genericPlan(statement.text(), parameterTypes, arguments);
    }

    /** {@link #genericPlan(SqlStatement, String, String)} of a statement's text. */
    static List<String> genericPlan(String statement, String parameterTypes, String arguments) {
        return Mono.usingWhen(TestDatabase.plain().create(),
                        // Dollar-quoted inside a DO block, the statement's $n are text to the driver,
                        // which would otherwise demand binds for them.
                        (Connection c) -> Flux.just(
                                        "SET plan_cache_mode = force_generic_plan",
                                        "DO $probe$ BEGIN EXECUTE $stmt$PREPARE probe(" + parameterTypes + ") AS "
                                                + statement + "$stmt$; END $probe$")
                                .concatMap(sql -> Flux.from(c.createStatement(sql).execute()).concatMap(r -> r.getRowsUpdated()))
                                .thenMany(Flux.from(c.createStatement("EXPLAIN EXECUTE probe(" + arguments + ")").execute()))
                                .concatMap(r -> r.map((row, meta) -> row.get(0, String.class)))
                                .collectList(),
                        Connection::close)
                .block(Duration.ofSeconds(30));
    }
}
