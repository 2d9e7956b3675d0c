package io.workqueue.postgres;

import io.r2dbc.spi.Connection;
import io.r2dbc.spi.Statement;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/** The server's plans for the library's statements, as the plan tests read them; nothing is executed. */
final class Plans {

    /** Marks a parameter bound as SQL NULL of a type. */
    record Null(Class<?> type) {}

    private Plans() {
    }

    /** The plan of {@code statement} with these binds (a {@link Null} binds a typed NULL). */
    static List<String> explain(String statement, Object... binds) {
        return Mono.usingWhen(TestDatabase.pool().create(),
                        (Connection c) -> {
                            Statement explain = c.createStatement("EXPLAIN " + statement);
                            for (int i = 0; i < binds.length; i++) {
                                if (binds[i] instanceof Null n) {
                                    explain.bindNull(i, n.type());
                                } else {
                                    explain.bind(i, binds[i]);
                                }
                            }
                            return Flux.from(explain.execute())
                                    .concatMap(r -> r.map((row, meta) -> row.get(0, String.class)))
                                    .collectList();
                        },
                        Connection::close)
                .block(Duration.ofSeconds(30));
    }

    /**
     * The generic plan of {@code statement}: prepared with SQL {@code PREPARE} (so the plan cache
     * applies from the first run), planned under {@code plan_cache_mode = force_generic_plan}, and
     * explained for the literal arguments {@code arguments}.
     */
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
