package io.workqueue.postgres;

import static io.workqueue.postgres.Rows.intValue;
import static io.workqueue.postgres.Rows.longValue;
import static io.workqueue.postgres.Rows.ofMicros;

import io.workqueue.Horizon;
import io.workqueue.Housekeeping;
import io.workqueue.Stats;
import io.workqueue.WorkQueueConfig;
import io.workqueue.internal.QueueMetrics;
import io.workqueue.internal.base.Durations;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The queue's maintenance and health reads: the reaper, the stats read, the health check, the MVCC
 * horizon, and the fleet's housekeeping round (one instance per queue keeps house, chosen on the
 * database; the others report its reading). Thread-safe.
 */
final class Upkeep {
    private static final Logger log = LoggerFactory.getLogger(Upkeep.class);
    /** The least time between two WARNs about a held horizon from one instance. */
    private static final Duration HORIZON_WARNING_INTERVAL = Duration.ofMinutes(1);

    private final WorkQueueConfig config;
    private final Database database;
    private final Sql sql;
    private final QueueMetrics metrics;
    /** This instance's name as a housekeeper: unique per instance, readable by an operator. */
    private final String keeperName = keeperName();
    /** {@code System.nanoTime()} of the last horizon WARN; 0 before the first. */
    private final AtomicLong lastHorizonWarning = new AtomicLong();

    Upkeep(WorkQueueConfig config, Database database, Sql sql, QueueMetrics metrics) {
        this.config = config;
        this.database = database;
        this.sql = sql;
        this.metrics = metrics;
    }

    /** Deletes completed items past retention, at most {@code reapBatchSize}. */
    Mono<Long> reap() {
        return Mono.defer(() -> database.withRetries(database.inConnection(connection -> Database.rowsUpdated(
                sql.reapCompleted.on(connection)
                        .bind("queue", config.name())
                        .bind("retention", Durations.micros(config.retention()))
                        .bind("batch", config.reapBatchSize()))))
                .doOnNext(metrics::reaped));
    }

    /** The stats read, in a transaction of its own (see {@link StatsRead}); feeds the gauges. */
    Mono<Stats> stats() {
        return reading().map(StatsRead.Reading::stats);
    }

    /** The stats read with the longest live lease; feeds the gauges. */
    private Mono<StatsRead.Reading> reading() {
        return Mono.defer(() -> StatsRead.reading(database, sql.statsCompleted, sql.stats, config.name(), config.maxAttempts())
                .doOnNext(reading -> {
                    metrics.observed(reading.stats());
                    metrics.longestLease(reading.longestLease());
                }));
    }

    /**
     * One housekeeping round: takes or renews the keeper's role for {@code held}; the keeper reaps
     * ({@code reapAll}), reads and publishes, the others report what the keeper last published.
     */
    Mono<Housekeeping> housekeep(Duration held, Supplier<Mono<Long>> reapAll) {
        return database.inConnection(connection -> Flux.from(sql.keepHouse.on(connection)
                        .bind("queue", config.name())
                        .bind("keeper", keeperName)
                        .bind("keeper_lease", Durations.micros(held))
                        .execute())
                .concatMap(result -> result.map((row, meta) -> Rows.keeperRow(row)))
                .single())
                .flatMap(row -> row.kept() ? keepHouse(held, reapAll) : Mono.just(follow(row)));
    }

    /** The keeper's round: reap, read, publish. */
    private Mono<Housekeeping> keepHouse(Duration lease, Supplier<Mono<Long>> reapAll) {
        return reapAll.get().flatMap(reaped -> reading().flatMap(reading -> horizon().flatMap(horizon ->
                database.inConnection(connection -> Database.rowsUpdated(sql.publishReading.on(connection)
                        .bind("queue", config.name())
                        .bind("keeper", keeperName)
                        .bind("pending", reading.stats().pending())
                        .bind("ready", reading.stats().ready())
                        .bind("leased", reading.stats().leased())
                        .bind("stalled", reading.stats().stalled())
                        .bind("completed", reading.stats().completed())
                        .bind("completed_capped", reading.stats().completedCapped())
                        .bind("oldest_ready", Durations.micros(reading.stats().oldestReadyAge()))
                        .bind("horizon", Durations.micros(horizon.oldestTransactionAge()))
                        .bind("horizon_pid", horizon.holderPid())
                        .bind("slot_xmin_age", horizon.replicationSlotXminAge())
                        .bind("longest_lease", Durations.micros(reading.longestLease()))))
                        .thenReturn(Housekeeping.of(true, keeperName, reaped, reading.stats(), horizon, Duration.ZERO,
                                lease)))));
    }

    /** Another instance keeps the house: report its reading, gauges included, without the WARN. */
    private Housekeeping follow(Rows.KeeperRow row) {
        if (row.stats() != null) {
            metrics.observed(row.stats());
        }
        if (row.horizon() != null) {
            metrics.observed(row.horizon());
        }
        if (row.longestLease() != null) {
            metrics.longestLease(row.longestLease());
        }
        return Housekeeping.of(false, row.keeper(), 0, row.stats(), row.horizon(), row.readingAge(), row.keeperLeaseLeft());
    }

    /** {@code HOSTNAME} (a pod's name under Kubernetes), the process id and a random suffix. */
    private static String keeperName() {
        String host = System.getenv("HOSTNAME");
        return (host == null || host.isBlank() ? "host" : host) + "/" + ProcessHandle.current().pid() + "/"
                + Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xffffffL);
    }

    /** The health check: whether an item has been ready longer than {@code threshold}. */
    Mono<Boolean> readyLongerThan(Duration threshold) {
        return database.inConnection(connection -> Flux.from(sql.readyLongerThan.on(connection)
                        .bind("queue", config.name())
                        .bind("attempt_limit", config.maxAttempts())
                        .bind("threshold", Durations.micros(threshold))
                        .execute())
                .concatMap(result -> result.map((row, meta) -> Boolean.TRUE.equals(row.get("late", Boolean.class))))
                .single());
    }

    /** The database's MVCC horizon; feeds the gauge and warns while it is held too long. */
    Mono<Horizon> horizon() {
        return Mono.defer(() -> database.inConnection(connection -> Flux.from(Sql.HORIZON.on(connection).execute())
                        .concatMap(result -> result.map((row, meta) -> Horizon.of(
                                ofMicros(longValue(row.get("oldest_us", Long.class))),
                                intValue(row.get("holder_pid", Integer.class)),
                                longValue(row.get("slot_xmin_age", Long.class)))))
                        .single())
                .doOnNext(this::observed));
    }

    /** Feeds the gauge, and warns, at most once a minute, while the horizon is held for too long. */
    private void observed(Horizon horizon) {
        metrics.observed(horizon);
        if (horizon.oldestTransactionAge().compareTo(config.horizonWarning()) <= 0) {
            return;
        }
        long now = System.nanoTime();
        long last = lastHorizonWarning.get();
        if ((last == 0 || now - last >= HORIZON_WARNING_INTERVAL.toNanos()) && lastHorizonWarning.compareAndSet(last, now)) {
            log.warn("queue {}: a transaction (pid {}) has held the database's MVCC horizon for {} s; until it ends,"
                            + " VACUUM cannot remove the row versions the queue leaves behind, so the table grows and"
                            + " looks behind the claim cursors and reaps slow down."
                            + " See pg_stat_activity for that pid (idle in transaction?), and idle_in_transaction_session_timeout",
                    config.name(), horizon.holderPid(), horizon.oldestTransactionAge().toSeconds());
        }
    }
}
