package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.workqueue.Entry;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.Stats;
import io.workqueue.testing.Poll;
import io.workqueue.testing.Queues;
import io.workqueue.testing.TestDatabase;
import reactor.core.publisher.Mono;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** {@code stats()}: every field, on the database clock, with ready as the claim's own predicate. */
class StatsIT {
    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final Duration LEASE = Duration.ofMinutes(5);
    private static String prefix;

    @BeforeAll
    static void createTable() {
        prefix = TestDatabase.createTable();
    }

    @Test
    void anEmptyQueueHasZeroEverywhere() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "empty");

        assertEquals(Stats.of(0, 0, 0, 0, 0, Duration.ZERO), queue.stats().block(WAIT));
    }

    @Test
    void everyFieldCountsItsOwnItems() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "fields", c -> c.maxAttempts(2));
        ReactiveWorkQueue<String> neighbour = Queues.fresh(prefix, "fields-neighbour");
        neighbour.enqueueKeys("ready1", "other").block(WAIT);
        // stalled: claimed twice under maxAttempts 2, then released.
        queue.enqueue(Entry.of("stalled").withPriority(100)).block(WAIT);
        for (int i = 0; i < 2; i++) {
            assertEquals("stalled", queue.claim(1, LEASE).block(WAIT).get(0).key());
            queue.release(Duration.ZERO, null, "stalled").block(WAIT);
        }
        // leased: the highest priority left when the claim runs.
        queue.enqueue(Entry.of("leased").withPriority(50)).block(WAIT);
        assertEquals("leased", queue.claim(1, LEASE).block(WAIT).get(0).key());
        queue.enqueue(Entry.of("ready1"), Entry.of("ready2"), Entry.of("delayed").withDelay(Duration.ofHours(1)),
                Entry.of("done1"), Entry.of("done2")).block(WAIT);
        queue.complete("done1", "done2").block(WAIT);
        // ready1 has been available for a minute.
        Queues.update(prefix, queue, "ready1", "available_at = available_at - INTERVAL '1 minute'");

        Stats stats = queue.stats().block(WAIT);
        assertEquals(5, stats.pending(), "stalled, leased, ready1, ready2, delayed");
        assertEquals(2, stats.ready(), "ready1, ready2");
        assertEquals(1, stats.leased());
        assertEquals(1, stats.stalled());
        assertEquals(2, stats.completed());
        assertTrue(stats.oldestReadyAge().compareTo(Duration.ofMinutes(1)) >= 0
                && stats.oldestReadyAge().compareTo(Duration.ofMinutes(1).plusSeconds(30)) < 0,
                "the oldest ready item has waited a minute on the database clock, but was " + stats.oldestReadyAge());

        List<Item<String>> claimable = queue.claim(0, LEASE).block(WAIT);
        assertEquals(stats.ready(), claimable.size(), "ready is exactly what a claim hands out");
        assertEquals(List.of("ready1", "ready2"), claimable.stream().map(Item::key).toList());
    }

    @Test
    void readyIsWhatAClaimWouldHandOutWhenAttemptsAreUnlimited() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "unlimited");
        queue.enqueue(Entry.of("leased").withPriority(3), Entry.of("retried").withPriority(2), Entry.of("fresh"),
                Entry.of("delayed").withDelay(Duration.ofHours(1))).block(WAIT);
        assertEquals("leased", queue.claim(1, LEASE).block(WAIT).get(0).key());
        for (int i = 0; i < 5; i++) {
            assertEquals("retried", queue.claim(1, LEASE).block(WAIT).get(0).key());
            queue.release(Duration.ZERO, null, "retried").block(WAIT);
        }

        Stats stats = queue.stats().block(WAIT);
        assertEquals(0, stats.stalled(), "stalled is 0 when attempts are unlimited");
        assertEquals(4, stats.pending());
        assertEquals(1, stats.leased());
        assertEquals(2, stats.ready(), "retried (5 attempts so far) and fresh");
        assertEquals(stats.ready(), queue.claim(0, LEASE).block(WAIT).size());
        assertEquals(0, queue.stats().block(WAIT).ready());
    }

    @Test
    void oldestReadyAgeIsPositiveOnceSomethingHasBeenReadyAWhile() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "age");
        queue.enqueueKeys("a").block(WAIT);

        Duration first = queue.stats().block(WAIT).oldestReadyAge();
        assertTrue(first.compareTo(Duration.ZERO) > 0, "ready since the enqueue committed: " + first);
        Duration later = Poll.until(WAIT, "the age to grow", () -> queue.stats().block(WAIT).oldestReadyAge(),
                age -> age.compareTo(first.plusMillis(50)) > 0);
        assertTrue(later.compareTo(Duration.ofSeconds(5)) < 0, "an age in the right unit: " + later);
    }

    @Test
    void oldestReadyAgeIsZeroWhenNothingIsReady() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "none-ready");
        queue.enqueue(Entry.of("leased").withPriority(1), Entry.of("delayed").withDelay(Duration.ofHours(1)),
                Entry.of("done")).block(WAIT);
        Queues.update(prefix, queue, "done", "available_at = available_at - INTERVAL '1 hour'");
        Queues.update(prefix, queue, "leased", "available_at = available_at - INTERVAL '1 hour'");
        queue.complete("done").block(WAIT);
        queue.claim(1, LEASE).block(WAIT);

        Stats stats = queue.stats().block(WAIT);
        assertEquals(Stats.of(2, 0, 1, 0, 1, Duration.ZERO), stats);
    }

    @Test
    void aLapsedLeaseCountsAsReadyNotLeased() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "lapsed");
        queue.enqueueKeys("a").block(WAIT);
        queue.claim(1, Duration.ofSeconds(1)).block(WAIT);
        Stats leased = queue.stats().block(WAIT);
        assertEquals(1, leased.leased());
        assertEquals(0, leased.ready());

        Stats lapsed = Poll.until(WAIT, "the lease to lapse", () -> queue.stats().block(WAIT), s -> s.leased() == 0);
        assertEquals(1, lapsed.ready());
        assertEquals(1, lapsed.pending());
    }

    @Test
    void theCompletedCountStopsAtItsLimitAndSaysSo() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "capped");
        queue.enqueueKeys("pending").block(WAIT);
        completedRows(queue, "done-", Stats.COMPLETED_COUNT_LIMIT);

        Stats atLimit = queue.stats().block(WAIT);
        assertEquals(Stats.COMPLETED_COUNT_LIMIT, atLimit.completed());
        assertFalse(atLimit.completedCapped(), "exactly the limit is still an exact count");
        assertEquals(1, atLimit.pending());

        completedRows(queue, "more-", 1);
        Stats past = queue.stats().block(WAIT);
        assertEquals(Stats.COMPLETED_COUNT_LIMIT, past.completed());
        assertTrue(past.completedCapped(), "one past the limit: " + past);
        assertEquals(1, past.pending(), "the pending counts stay exact");
        assertTrue(past.toString().contains("completed=" + Stats.COMPLETED_COUNT_LIMIT + "+"), past.toString());
    }

    @Test
    void readyLongerThanAgreesWithTheOldestReadyAgeWhateverTheOtherStates() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "late", c -> c.maxAttempts(1));
        queue.enqueue(Entry.of("ready-10m"), Entry.of("lapsed-3m").withPriority(7), Entry.of("leased-1h").withPriority(9),
                Entry.of("stalled-1h").withPriority(-4), Entry.of("delayed").withDelay(Duration.ofHours(1)),
                Entry.of("done-2h")).block(WAIT);
        queue.complete("done-2h").block(WAIT);
        // Each state's row made old in the column that would fool a check reading the wrong one.
        Queues.update(prefix, queue, "ready-10m", "available_at = now() - INTERVAL '10 minutes'");
        Queues.update(prefix, queue, "lapsed-3m", "available_at = now() - INTERVAL '1 hour', attempts = 0,"
                + " lease_until = now() - INTERVAL '3 minutes'");
        Queues.update(prefix, queue, "leased-1h", "available_at = now() - INTERVAL '1 hour', lease_until = now() + INTERVAL '1 hour'");
        Queues.update(prefix, queue, "stalled-1h", "available_at = now() - INTERVAL '1 hour', attempts = 1");
        Queues.update(prefix, queue, "done-2h", "available_at = now() - INTERVAL '2 hours'");

        Duration oldestOfAll = queue.stats().block(WAIT).oldestReadyAge();
        assertTrue(oldestOfAll.compareTo(Duration.ofMinutes(10)) >= 0 && oldestOfAll.compareTo(Duration.ofMinutes(11)) < 0,
                "the stats see ready-10m as the oldest: " + oldestOfAll);
        assertLate(queue, true, Duration.ZERO, Duration.ofMinutes(1), Duration.ofMinutes(9));
        assertLate(queue, false, Duration.ofMinutes(11), Duration.ofMinutes(59), Duration.ofDays(1),
                Duration.ofSeconds(Long.MAX_VALUE));

        queue.remove("ready-10m").block(WAIT);
        assertLate(queue, true, Duration.ofMinutes(2));
        assertLate(queue, false, Duration.ofMinutes(4), Duration.ofMinutes(11));
        Duration oldest = queue.stats().block(WAIT).oldestReadyAge();
        assertTrue(oldest.compareTo(Duration.ofMinutes(3)) >= 0 && oldest.compareTo(Duration.ofMinutes(4)) < 0,
                "the lapsed lease has been ready since it lapsed: " + oldest);

        queue.remove("lapsed-3m").block(WAIT);
        assertLate(queue, false, Duration.ZERO);
        assertEquals(Duration.ZERO, queue.stats().block(WAIT).oldestReadyAge());
    }

    @Test
    void readyLongerThanRefusesABadThresholdAtSubscriptionOnly() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "late-bad");
        Mono<Boolean> negative = queue.readyLongerThan(Duration.ofNanos(-1));
        Mono<Boolean> missing = queue.readyLongerThan(null);
        assertThrows(IllegalArgumentException.class, () -> negative.block(WAIT));
        assertThrows(NullPointerException.class, () -> missing.block(WAIT));
        queue.enqueueKeys("a").block(WAIT);
        assertTrue(queue.readyLongerThan(Duration.ZERO).block(WAIT), "the queue still answers");
    }

    @Test
    void theStatsReadLeavesNeitherItsSettingNorATransactionOnAPooledConnection() {
        // One connection, so whatever the stats read leaves on it, the next borrower gets.
        io.r2dbc.pool.ConnectionPool single = TestDatabase.newPool(1);
        try {
            ReactiveWorkQueue<String> queue = Queues.over(single, prefix, TestDatabase.uniqueName("settings"), c -> c);
            io.workqueue.WorkQueueAdmin admin = io.workqueue.WorkQueueAdmin.builder(single).tablePrefix(prefix).build();
            queue.enqueueKeys("a").block(WAIT);
            String before = sessionState(single);
            assertEquals(1, queue.stats().block(WAIT).pending());
            assertEquals(before, sessionState(single), "after the queue's stats read");
            assertEquals(1, admin.stats(queue.name()).block(WAIT).pending());
            assertEquals(before, sessionState(single), "after the admin's");
            // Cancelled at instants from as soon as it starts to past its end, again and again: the
            // next borrower is never left inside the read's transaction. (A cancel racing the pool's
            // hand-over once let the pool take the connection back after BEGIN; ConnectionAcquisition.)
            for (int i = 0; i < 100; i++) {
                admin.stats(queue.name()).timeout(Duration.ofNanos(1 + (i % 40) * 50_000L)).onErrorResume(e -> Mono.empty())
                        .block(WAIT);
                assertEquals(before, sessionState(single), "after cancelled read " + i);
            }
        } finally {
            single.disposeLater().block(WAIT);
        }
    }

    /** The connection's jit setting, and whether a transaction is open on it (now() is its start). */
    private static String sessionState(io.r2dbc.pool.ConnectionPool pool) {
        return Mono.usingWhen(pool.create(),
                        c -> Mono.from(c.createStatement("SELECT current_setting('jit') || ' '"
                                        + " || (now() = statement_timestamp())::text").execute())
                                .flatMap(r -> Mono.from(r.map((row, meta) -> row.get(0, String.class)))),
                        io.r2dbc.spi.Connection::close)
                .block(WAIT);
    }

    private static void assertLate(ReactiveWorkQueue<String> queue, boolean expected, Duration... thresholds) {
        for (Duration threshold : thresholds) {
            assertEquals(expected, queue.readyLongerThan(threshold).block(WAIT), "readyLongerThan(" + threshold + ")");
        }
    }

    /** {@code n} completed rows written directly: a history, without running it through the queue. */
    private static void completedRows(ReactiveWorkQueue<String> queue, String keyPrefix, long n) {
        long written = TestDatabase.queryLong("WITH written AS (INSERT INTO " + Queues.table(prefix)
                + " (queue_name, item_key, completed_at) SELECT $1, $2 || g, now() FROM generate_series(1, $3::int) AS g"
                + " RETURNING 1) SELECT count(*) FROM written", queue.name(), keyPrefix, (int) n);
        assertEquals(n, written);
    }
}
