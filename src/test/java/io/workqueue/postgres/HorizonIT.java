package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.r2dbc.spi.Connection;
import io.workqueue.Horizon;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkQueueMeters;
import io.workqueue.testing.Poll;
import io.workqueue.testing.Queues;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * {@code horizon()} names the transaction that holds back the MVCC horizon: a session idle in a
 * transaction that has an xid, or a reader holding a snapshot, and nothing once it ends.
 */
class HorizonIT {
    private static final Duration WAIT = Duration.ofSeconds(20);
    private static String prefix;

    @BeforeAll
    static void createTable() {
        prefix = TestDatabase.createTable();
    }

    /** Another session, in a transaction opened by {@code begin} and left open; returns its pid. */
    private static int openTransaction(Connection connection, String begin, String first) {
        int pid = pidOf(connection);
        Flux.from(connection.createStatement(begin).execute()).concatMap(r -> r.getRowsUpdated()).blockLast(WAIT);
        Flux.from(connection.createStatement(first).execute()).concatMap(r -> r.map((row, meta) -> 1)).blockLast(WAIT);
        return pid;
    }

    /** The backend pid of {@code connection}'s session. */
    private static int pidOf(Connection connection) {
        return Mono.from(connection.createStatement("SELECT pg_backend_pid()").execute())
                .flatMap(r -> Mono.from(r.map((row, meta) -> row.get(0, Integer.class))))
                .block(WAIT);
    }

    private static double ageOf(int pid) {
        return TestDatabase.queryLong("SELECT (EXTRACT(EPOCH FROM now() - xact_start) * 1000000)::bigint"
                + " FROM pg_stat_activity WHERE pid = $1", pid) / 1e6;
    }

    @Test
    void anIdleTransactionWithAnXidIsNamedWithItsAgeUntilItEnds() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "horizon");
        Connection pin = Mono.from(TestDatabase.plain().create()).block(WAIT);
        try {
            int pid = openTransaction(pin, "BEGIN", "SELECT txid_current()");
            double ageBefore = ageOf(pid);

            Horizon held = queue.horizon().block(WAIT);

            assertEquals(pid, held.holderPid(), () -> "the pinning session: " + held);
            assertTrue(held.oldestTransactionAge().toNanos() / 1e9 >= ageBefore, held::toString);
            Flux.from(pin.createStatement("ROLLBACK").execute()).concatMap(r -> r.getRowsUpdated()).blockLast(WAIT);
            Horizon released = queue.horizon().block(WAIT);
            assertNotEquals(pid, released.holderPid(), released::toString);
        } finally {
            Mono.from(pin.close()).block(WAIT);
        }
    }

    @Test
    void aRepeatableReadReaderHoldingASnapshotCountsToo() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "horizon-reader");
        Connection reader = Mono.from(TestDatabase.plain().create()).block(WAIT);
        try {
            int pid = openTransaction(reader, "BEGIN ISOLATION LEVEL REPEATABLE READ", "SELECT 1");

            assertEquals(pid, queue.horizon().block(WAIT).holderPid());
        } finally {
            Mono.from(reader.close()).block(WAIT);
        }
    }

    /**
     * A plain (lazy) VACUUM shows a snapshot in {@code pg_stat_activity} for as long as it runs,
     * but PostgreSQL leaves it out of the horizon (other vacuums remove what it could still see):
     * an autovacuum of a bloated table runs for minutes, and naming it would send an operator after
     * the cure. Here a vacuum slowed to a crawl starts first, a pinning transaction after it; the
     * pin is the holder.
     */
    @Test
    void aRunningVacuumIsNotTheHolder() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "horizon-vacuum");
        String bloated = TestDatabase.uniqueName("vacuumed").replace('-', '_');
        TestDatabase.execute("CREATE TABLE " + bloated + " AS SELECT i, repeat('x', 200) AS filler"
                + " FROM generate_series(1, 20000) AS i");
        TestDatabase.execute("DELETE FROM " + bloated + " WHERE i % 2 = 0");
        Connection vacuuming = Mono.from(TestDatabase.plain().create()).block(WAIT);
        Connection pin = Mono.from(TestDatabase.plain().create()).block(WAIT);
        int vacuumPid = pidOf(vacuuming);
        try {
            // A page a second at most: the vacuum outlives the test, which cancels it.
            Flux.just("SET vacuum_cost_delay = 100", "SET vacuum_cost_limit = 1")
                    .concatMap(sql -> Flux.from(vacuuming.createStatement(sql).execute()).concatMap(r -> r.getRowsUpdated()))
                    .blockLast(WAIT);
            Flux.from(vacuuming.createStatement("VACUUM " + bloated).execute())
                    .concatMap(r -> r.getRowsUpdated())
                    .onErrorResume(e -> Mono.empty()) // cancelled at the end
                    .subscribe();
            // Vacuuming, and showing a snapshot as it does: what a naive reading would name.
            Poll.until(WAIT, "pid " + vacuumPid + " to vacuum", () -> TestDatabase.queryLong(
                    "SELECT count(*) FROM pg_stat_activity a JOIN pg_stat_progress_vacuum p USING (pid)"
                            + " WHERE pid = $1 AND a.backend_xmin IS NOT NULL", vacuumPid) == 1);
            int pinPid = openTransaction(pin, "BEGIN", "SELECT txid_current()");

            Horizon held = queue.horizon().block(WAIT);

            assertEquals(pinPid, held.holderPid(), () -> "the pin, not the vacuum (pid " + vacuumPid + "): " + held);
        } finally {
            TestDatabase.queryLong("SELECT count(pg_cancel_backend(pid)) FROM pg_stat_progress_vacuum WHERE pid = $1",
                    vacuumPid);
            Mono.from(pin.close()).block(WAIT);
            Mono.from(vacuuming.close()).block(WAIT);
            TestDatabase.execute("DROP TABLE " + bloated);
        }
    }

    @Test
    void theReadingFeedsTheHorizonAgeGauge() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        String name = TestDatabase.uniqueName("horizon-gauge");
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(TestDatabase.pool(), String.class)
                .config(WorkQueueConfig.builder(name).tablePrefix(prefix).horizonWarning(Duration.ofSeconds(1)).build())
                .meterRegistry(registry)
                .build();
        assertTrue(Double.isNaN(registry.get(WorkQueueMeters.HORIZON_AGE).tag("queue", name).gauge().value()),
                "nothing before the first reading");
        Connection pin = Mono.from(TestDatabase.plain().create()).block(WAIT);
        try {
            openTransaction(pin, "BEGIN", "SELECT txid_current()");
            Horizon held = queue.horizon().block(WAIT);

            assertEquals(held.oldestTransactionAge().toNanos() / 1e9,
                    registry.get(WorkQueueMeters.HORIZON_AGE).tag("queue", name).gauge().value(), 1e-9);
        } finally {
            Mono.from(pin.close()).block(WAIT);
        }
    }
}
