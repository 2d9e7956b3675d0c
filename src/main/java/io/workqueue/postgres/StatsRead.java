package io.workqueue.postgres;

import io.workqueue.Stats;
import java.time.Duration;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The stats read, for the queue and the admin alike: the stats statement in a short transaction
 * of its own, after statsSettings, so the settings end with it and never reach the next borrower
 * of a pooled connection (or, behind a transaction-mode pooler, another client).
 */
final class StatsRead {
    private StatsRead() {}

    /**
     * Reads the stats of {@code queue}. An error rolls the transaction back before the error goes
     * on; cancellation cancels the statement on the server and closes the connection
     * ({@link Database#inTransaction}).
     */
    static Mono<Stats> of(Database database, SqlStatement statement, String queue, int maxAttempts) {
        return reading(database, statement, queue, maxAttempts).map(Reading::stats);
    }

    /** {@link #of}, with the longest-running live lease the same statement read. */
    static Mono<Reading> reading(Database database, SqlStatement statement, String queue, int maxAttempts) {
        return database.inTransaction(c -> Flux.from(Sql.STATS_SETTINGS.on(c).execute())
                .concatMap(result -> result.getRowsUpdated())
                .thenMany(Flux.from(statement.on(c).bind("queue", queue).bind("attempt_limit", maxAttempts).execute()))
                .concatMap(result -> result.map((row, meta) -> {
                    Duration longestLease = Rows.longestLease(row);
                    return new Reading(Rows.stats(row), longestLease == null ? Duration.ZERO : longestLease);
                }))
                .single());
    }

    /**
     * One stats read: the snapshot, and how long the longest-running live lease has run since its
     * claim (zero when nothing is leased), which only the gauges report.
     */
    record Reading(Stats stats, Duration longestLease) {}
}
