package io.workqueue.postgres;

import io.r2dbc.spi.Connection;
import io.workqueue.Stats;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The stats read, for the queue and the admin alike: {@link Sql#stats} in a short transaction of
 * its own, after {@link Sql#STATS_SETTINGS}, so the settings end with it and never reach the next
 * borrower of a pooled connection (or, behind a transaction-mode pooler, another client).
 */
final class StatsRead {
    private StatsRead() {}

    /**
     * Reads the stats of {@code queue} on {@code connection}. An error rolls the transaction back
     * before the error goes on; so does cancellation (the rollback is queued on the connection
     * behind the statement in flight, ahead of whatever its next borrower sends).
     */
    static Mono<Stats> on(Connection connection, String statement, String queue, int maxAttempts) {
        return Mono.usingWhen(Mono.from(connection.beginTransaction()).thenReturn(connection),
                c -> Flux.from(c.createStatement(Sql.STATS_SETTINGS).execute())
                        .concatMap(result -> result.getRowsUpdated())
                        .thenMany(Flux.from(c.createStatement(statement).bind(0, queue).bind(1, maxAttempts).execute()))
                        .concatMap(result -> result.map((row, meta) -> Rows.stats(row)))
                        .single(),
                Connection::commitTransaction,
                (c, error) -> Mono.from(c.rollbackTransaction()).onErrorResume(e -> Mono.empty()),
                c -> Mono.from(c.rollbackTransaction()).onErrorResume(e -> Mono.empty()));
    }
}
