package io.workqueue.postgres;

import io.workqueue.Stats;
import java.time.Duration;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The stats read, for the queue and the admin alike: statsCompleted, then stats, in a short
 * transaction of their own. The first counts the completed items and sets how the second is
 * planned (see maintenance.sql); the settings end with the transaction and never reach the next
 * borrower of a pooled connection (or, behind a transaction-mode pooler, another client). Two
 * round trips inside the transaction, as one setting statement and the read took before.
 */
final class StatsRead {
    private StatsRead() {}

    /**
     * Reads the stats of {@code queue}. An error rolls the transaction back before the error goes
     * on; cancellation cancels the statement on the server and closes the connection
     * ({@link Database#inTransaction}).
     */
    static Mono<Stats> of(Database database, SqlStatement statsCompleted, SqlStatement stats, String queue,
            int maxAttempts) {
        return reading(database, statsCompleted, stats, queue, maxAttempts).map(Reading::stats);
    }

    /** {@link #of}, with the longest-running live lease the same read found. */
    static Mono<Reading> reading(Database database, SqlStatement statsCompleted, SqlStatement stats, String queue,
            int maxAttempts) {
        return database.inTransaction(c -> Flux.from(statsCompleted.on(c).bind("queue", queue).execute())
                .concatMap(result -> result.map((row, meta) -> Rows.longValue(row.get("completed", Long.class))))
                .single()
                .flatMap(completed -> Flux.from(stats.on(c).bind("queue", queue).bind("attempt_limit", maxAttempts)
                                .execute())
                        .concatMap(result -> result.map((row, meta) -> {
                            Duration longestLease = Rows.longestLease(row);
                            return new Reading(Rows.stats(row, completed),
                                    longestLease == null ? Duration.ZERO : longestLease);
                        }))
                        .single()));
    }

    /**
     * One stats read: the snapshot, and how long the longest-running live lease has run since its
     * claim (zero when nothing is leased), which only the gauges report.
     */
    record Reading(Stats stats, Duration longestLease) {}
}
