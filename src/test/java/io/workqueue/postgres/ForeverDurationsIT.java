package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.workqueue.Entry;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkerOptions;
import io.workqueue.testing.Poll;
import io.workqueue.testing.Queues;
import io.workqueue.testing.RowLock;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.test.StepVerifier;

/**
 * Durations meant as "forever" on the real server: whatever a caller passes, the library acts on
 * at most {@link ReactiveWorkQueue#MAX_DURATION} (100 years). Unchecked microsecond arithmetic
 * wraps {@code Duration.ofMillis(Long.MAX_VALUE)} to -1000 µs, and values near the limit of a
 * {@code long} of microseconds take {@code now()} out of PostgreSQL's timestamp range.
 */
class ForeverDurationsIT {
    private static final Duration WAIT = Duration.ofSeconds(10);
    /** Seconds in 100 years of 365.25 days: {@code MAX_DURATION} exactly. */
    private static final double CAP_SECONDS = ReactiveWorkQueue.MAX_DURATION.getSeconds();
    /** A delay whose microseconds fit a {@code long} but whose timestamp PostgreSQL cannot represent. */
    private static final Duration BEYOND_TIMESTAMPS = Duration.ofDays(106_750_000);
    private static String prefix;

    @BeforeAll
    static void createTable() {
        prefix = TestDatabase.createTable();
    }

    /** Two spellings of "forever": the longest whole-millisecond duration and the longest duration. */
    static List<Duration> forever() {
        return List.of(Duration.ofMillis(Long.MAX_VALUE), Duration.ofSeconds(Long.MAX_VALUE, 999_999_999));
    }

    private static final Duration LONGEST = Duration.ofSeconds(Long.MAX_VALUE, 999_999_999);

    /**
     * How far ahead of the server's {@code now()} a timestamp column of {@code key} lies, in
     * seconds: the cap, give or take the moments between the write and this read.
     */
    private static void assertCappedAhead(ReactiveWorkQueue<String> queue, String key, String column) {
        double ahead = Double.parseDouble(Queues.column(prefix, queue, key,
                "EXTRACT(EPOCH FROM " + column + " - now())::float8"));
        assertTrue(Math.abs(CAP_SECONDS - ahead) < 60, column + " of " + key + " lies " + ahead
                + " s ahead, not the cap's " + CAP_SECONDS + " s");
    }

    private static void assertNothingClaimable(ReactiveWorkQueue<String> queue) {
        assertEquals(List.of(), queue.claim(10, Duration.ofMinutes(1)).block(WAIT), "nothing is due");
    }

    @ParameterizedTest
    @MethodSource("forever")
    void aForeverLeaseLeasesForTheCapAndTheItemIsNotClaimedAgain(Duration lease) {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "lease");
        queue.enqueueKeys("claimed", "claimed with a complete").block(WAIT);

        assertEquals(1, queue.claim(1, lease).block(WAIT).size());
        assertEquals(1, queue.completeAndClaim(List.of(), 1, lease).block(WAIT).size());

        assertNothingClaimable(queue);
        assertCappedAhead(queue, "claimed", "lease_until");
        assertCappedAhead(queue, "claimed with a complete", "lease_until");
    }

    @ParameterizedTest
    @MethodSource("forever")
    void aForeverDelayKeepsTheItemNotReady(Duration delay) {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "delay");
        queue.enqueue(Entry.of("later").withDelay(delay)).block(WAIT);

        assertNothingClaimable(queue);
        assertEquals(0L, queue.stats().block(WAIT).ready());
        assertCappedAhead(queue, "later", "available_at");
    }

    @ParameterizedTest
    @MethodSource("forever")
    void aForeverReleaseDelayKeepsTheItemNotReady(Duration delay) {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "release");
        queue.enqueueKeys("released").block(WAIT);
        assertEquals(1, queue.claim(1, Duration.ofMinutes(1)).block(WAIT).size());

        assertEquals(1L, queue.release(delay, null, "released").block(WAIT));

        assertNothingClaimable(queue);
        assertCappedAhead(queue, "released", "available_at");
    }

    @ParameterizedTest
    @MethodSource("forever")
    void aForeverRetentionNeverReapsAJustCompletedItem(Duration retention) {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "retention", c -> c.retention(retention));
        queue.enqueueKeys("kept").block(WAIT);
        assertEquals(1L, queue.complete("kept").block(WAIT));

        assertEquals(0L, queue.reap().block(WAIT));
        assertTrue(Queues.exists(prefix, queue, "kept"), "the completed item is kept");
    }

    @Test
    void aBatchCarryingADelayBeyondTimestampsSucceedsForEveryCaller() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "batch");
        queue.enqueueKeys("blocker").block(WAIT);
        // Park the group commit behind a row lock, so the next two callers share one upsert.
        CompletableFuture<Void> parked;
        CompletableFuture<Void> huge;
        CompletableFuture<Void> normal;
        try (RowLock lock = RowLock.hold(Queues.table(prefix), queue.name(), "blocker")) {
            parked = queue.enqueue(Entry.of("blocker").withPriority(1)).toFuture();
            lock.awaitWaiters(1);
            huge = queue.enqueue(Entry.of("huge").withDelay(BEYOND_TIMESTAMPS)).toFuture();
            normal = queue.enqueue(Entry.of("normal")).toFuture();
        }

        for (CompletableFuture<Void> write : List.of(parked, huge, normal)) {
            await(write);
        }
        List<Item<String>> claimed = queue.claim(10, Duration.ofMinutes(1)).block(WAIT);
        assertEquals(List.of("blocker", "normal"), claimed.stream().map(Item::key).toList());
        assertCappedAhead(queue, "huge", "available_at");
    }

    @Test
    void theLongestDurationIsAcceptedWhereverADurationIs() {
        Sinks.Many<Object> wakes = Sinks.many().multicast().directBestEffort();
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(TestDatabase.pool(), String.class)
                .config(WorkQueueConfig.builder(TestDatabase.uniqueName("longest"))
                        .tablePrefix(prefix)
                        .retention(LONGEST)
                        .minWakeInterval(LONGEST)
                        .writeTimeout(LONGEST)
                        .build())
                .wakeups(wakes.asFlux())
                .build();

        queue.enqueue(Entry.of("delayed").withDelay(LONGEST), Entry.of("streamed")).block(WAIT);
        assertCappedAhead(queue, "delayed", "available_at");

        Item<String> streamed = queue.claimStream(LONGEST, LONGEST).blockFirst(WAIT);
        assertEquals("streamed", streamed.key());
        assertCappedAhead(queue, "streamed", "lease_until");
        assertEquals(1L, queue.release(LONGEST, null, "streamed").block(WAIT));
        assertCappedAhead(queue, "streamed", "available_at");

        // A wait as long as it gets still ends at the first wake (the floor has not started yet).
        StepVerifier.create(queue.awaitWork(LONGEST))
                .then(() -> Poll.until(WAIT, "the gate subscribed to its wakeups", () -> wakes.currentSubscriberCount() > 0))
                .then(() -> wakes.tryEmitNext("wake"))
                .expectComplete()
                .verify(WAIT);

        queue.enqueueKeys("processed").block(WAIT);
        Item<String> processed = queue.process(item -> Mono.empty(),
                        WorkerOptions.builder().lease(LONGEST).poll(LONGEST).build())
                .blockFirst(WAIT);
        assertEquals("processed", processed.key());
        Poll.until(WAIT, "the worker completed what it handled",
                () -> "true".equals(Queues.column(prefix, queue, "processed", "(completed_at IS NOT NULL)::text")));
        assertEquals(0L, queue.reap().block(WAIT), "retention keeps the completed item");
    }

    private static void await(CompletableFuture<?> future) {
        try {
            future.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            throw new AssertionError("enqueue did not complete", e);
        }
    }
}
