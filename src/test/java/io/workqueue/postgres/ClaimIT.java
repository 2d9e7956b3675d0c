package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.workqueue.Entry;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.Stats;
import io.workqueue.testing.Poll;
import io.workqueue.testing.Queues;
import io.workqueue.testing.RowLock;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/** {@code claim(limit, lease)}: what is due, in which order, how many, and what a reclaim looks like. */
class ClaimIT {
    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final Duration LONG_LEASE = Duration.ofMinutes(5);
    private static String prefix;

    @BeforeAll
    static void createTable() {
        prefix = TestDatabase.createTable();
    }

    private static List<String> keys(List<Item<String>> items) {
        return items.stream().map(Item::key).toList();
    }

    private static List<Item<String>> claim(ReactiveWorkQueue<String> queue, int limit) {
        return queue.claim(limit, LONG_LEASE).block(WAIT);
    }

    @Test
    void aLiveLeaseHidesTheItemAndALapsedLeaseReturnsItFlaggedReclaimed() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "lapse");
        queue.enqueueKeys("a").block(WAIT);

        List<Item<String>> first = queue.claim(10, Duration.ofMillis(200)).block(WAIT);
        assertEquals(List.of(Item.of("a", 0, 1, false)), first);
        // The lease lapses on the database clock: wait until the database hands the item out again.
        List<Item<String>> second = Poll.until(WAIT, "the 200ms lease to lapse",
                () -> queue.claim(10, LONG_LEASE).block(WAIT), items -> !items.isEmpty());

        assertEquals(List.of(Item.of("a", 0, 2, true)), second);
        assertEquals(List.of(), claim(queue, 10), "the new lease is live");
    }

    @Test
    void aLiveLeaseIsNotHandedOutAgain() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "live");
        queue.enqueueKeys("a", "b").block(WAIT);

        assertEquals(List.of("a"), keys(claim(queue, 1)));
        assertEquals(List.of("b"), keys(claim(queue, 10)));
        assertEquals(List.of(), claim(queue, 10));
    }

    @Test
    void aReleasedItemIsNotFlaggedReclaimed() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "released");
        queue.enqueueKeys("a").block(WAIT);
        claim(queue, 1);
        assertEquals(1L, queue.release(Duration.ZERO, null, "a").block(WAIT));

        assertEquals(List.of(Item.of("a", 0, 2, false)), claim(queue, 1));
    }

    @Test
    void aCompletedThenReEnqueuedItemIsNotFlaggedReclaimed() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "recompleted");
        queue.enqueueKeys("a").block(WAIT);
        queue.claim(1, Duration.ofMillis(1)).block(WAIT); // lapses at once, but is completed first
        assertEquals(1L, queue.complete("a").block(WAIT));
        queue.enqueueKeys("a").block(WAIT);

        assertEquals(List.of(Item.of("a", 0, 1, false)), claim(queue, 1));
    }

    @Test
    void claimsGoByPriorityThenAvailabilityThenKey() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "order");
        // Keys chosen so that alphabetical order, insertion order and the claim order all differ;
        // "B" < "a" bytewise (the key column is COLLATE "C").
        queue.enqueue(List.of(
                Entry.of("a"), Entry.of("B"), Entry.of("c"),
                Entry.of("low").withPriority(-5),
                Entry.of("high").withPriority(7),
                Entry.of("mid1").withPriority(3), Entry.of("mid2").withPriority(3))).block(WAIT);
        // Same priority, earlier availability wins over key order.
        Queues.update(prefix, queue, "mid2", "available_at = available_at - INTERVAL '1 minute'");
        Queues.update(prefix, queue, "c", "available_at = available_at - INTERVAL '2 minutes'");
        List<String> expected = List.of("high", "mid2", "mid1", "c", "B", "a", "low");

        // One at a time: the statement picks in this order, not just sorts what it picked.
        List<String> oneByOne = new ArrayList<>();
        for (int i = 0; i < expected.size(); i++) {
            List<Item<String>> items = claim(queue, 1);
            assertEquals(1, items.size());
            oneByOne.add(items.get(0).key());
        }
        assertEquals(expected, oneByOne);

        queue.release(Duration.ZERO, null, expected).block(WAIT);
        // The release made every item available at the same instant; shift two back again.
        Queues.update(prefix, queue, "mid2", "available_at = available_at - INTERVAL '30 minutes'");
        Queues.update(prefix, queue, "c", "available_at = available_at - INTERVAL '1 hour'");
        // Moving availability back by hand puts items behind this instance's claim cursors, where
        // only its next look finds them (ClaimCursorsIT); a fresh instance's first claim reads from
        // the head, the whole index in claim order.
        List<Item<String>> all = claim(Queues.over(TestDatabase.pool(), prefix, queue.name(), c -> c), 100);
        assertEquals(expected, keys(all), "a batch comes back in claim order");
        assertEquals(List.of(7, 3, 3, 0, 0, 0, -5), all.stream().map(Item::priority).toList());
    }

    @Test
    void aLimitOfZeroNegativeOrAboveTheMaximumMeansTheMaximum() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "limits", c -> c.maxClaimBatch(3));
        queue.enqueueKeys(IntStream.range(0, 25).mapToObj(i -> "k" + (100 + i)).toList()).block(WAIT);

        assertEquals(3, claim(queue, 0).size());
        assertEquals(3, claim(queue, -1).size());
        assertEquals(3, claim(queue, Integer.MIN_VALUE).size());
        assertEquals(3, claim(queue, 4).size());
        assertEquals(3, claim(queue, Integer.MAX_VALUE).size());
        assertEquals(2, claim(queue, 2).size());
        assertEquals(1, claim(queue, 1).size());
        assertEquals(3, claim(queue, 3).size());
        assertEquals(3, claim(queue, 0).size());
        assertEquals(25 - 24, claim(queue, 0).size(), "a short batch: the queue is drained");
    }

    @Test
    void aLeaseThatIsNotPositiveFailsAtSubscriptionAndLeasesNothing() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "badlease");
        queue.enqueueKeys("a").block(WAIT);

        for (Duration lease : new Duration[] {Duration.ZERO, Duration.ofMillis(-1), null}) {
            Mono<List<Item<String>>> claim = assertDoesNotThrow(() -> queue.claim(1, lease));
            StepVerifier.create(claim).expectError(IllegalArgumentException.class).verify(WAIT);
        }
        assertEquals(1, queue.stats().block(WAIT).ready(), "nothing was leased");
    }

    @Test
    void anEmptyQueueGivesAnEmptyList() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "empty");

        StepVerifier.create(queue.claim(10, LONG_LEASE)).expectNext(List.of()).verifyComplete();
    }

    @Test
    void anItemIsNotDueUntilItsDelayHasPassed() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "delayed");
        queue.enqueue(Entry.of("later").withDelay(Duration.ofHours(1)).withPriority(10),
                Entry.of("soon").withDelay(Duration.ofSeconds(1)).withPriority(5),
                Entry.of("now")).block(WAIT);
        // The delay is measured on the database clock from the write, to the microsecond.
        assertEquals("true", Queues.column(prefix, queue, "soon", "available_at - enqueued_at = INTERVAL '1 second'"));
        assertEquals("true", Queues.column(prefix, queue, "later", "available_at - enqueued_at = INTERVAL '1 hour'"));

        assertEquals(List.of("now"), keys(claim(queue, 10)), "only the undelayed item is due at once");
        List<Item<String>> soon = Poll.until(WAIT, "the 1s delay to pass",
                () -> claim(queue, 10), items -> !items.isEmpty());
        assertEquals(List.of("soon"), keys(soon));
        assertEquals(List.of(), claim(queue, 10), "an hour's delay has not passed");
        Stats stats = queue.stats().block(WAIT);
        assertEquals(3, stats.pending());
        assertEquals(0, stats.ready());
    }

    @Test
    void aNegativeEnqueueDelayMeansNowNotThePast() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "negative-delay");
        queue.enqueue(Entry.of("a").withDelay(Duration.ofHours(-1))).block(WAIT);

        assertEquals("true", Queues.column(prefix, queue, "a", "available_at = enqueued_at"));
        assertEquals(List.of("a"), keys(claim(queue, 1)));
    }

    @Test
    void aClaimOnlyLeasesItemsOfItsOwnQueue() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "mine");
        ReactiveWorkQueue<String> neighbour = Queues.fresh(prefix, "theirs");
        neighbour.enqueue(Entry.of("shared").withPriority(9), Entry.of("theirs").withPriority(9)).block(WAIT);
        queue.enqueueKeys("shared", "mine").block(WAIT);

        assertEquals(List.of("mine", "shared"), keys(claim(queue, 10)));
        assertEquals(List.of(), claim(queue, 10));
        assertEquals(2, neighbour.stats().block(WAIT).ready(), "the neighbour's items are untouched");
    }

    @Test
    void anItemOutOfAttemptsStallsAndIsCountedStalledNotReady() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "attempts", c -> c.maxAttempts(2));
        queue.enqueue(Entry.of("flaky").withPriority(1), Entry.of("other")).block(WAIT);

        assertEquals(List.of(Item.of("flaky", 1, 1, false)), claim(queue, 1));
        queue.release(Duration.ZERO, new RuntimeException("first"), "flaky").block(WAIT);
        assertEquals(List.of(Item.of("flaky", 1, 2, false)), claim(queue, 1));
        queue.release(Duration.ZERO, new RuntimeException("second"), "flaky").block(WAIT);

        Stats stats = queue.stats().block(WAIT);
        assertEquals(1, stats.stalled());
        assertEquals(1, stats.ready(), "only the other item is ready");
        assertEquals(2, stats.pending());
        assertEquals(List.of("other"), keys(claim(queue, 10)), "the stalled item is not handed out");
        assertEquals(List.of(), claim(queue, 10));
        assertEquals(1, queue.stats().block(WAIT).stalled());
    }

    @Test
    void unlimitedAttemptsNeverStall() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "unlimited");
        queue.enqueueKeys("a").block(WAIT);
        for (int attempt = 1; attempt <= 5; attempt++) {
            assertEquals(List.of(Item.of("a", 0, attempt, false)), claim(queue, 1));
            queue.release(Duration.ZERO, null, "a").block(WAIT);
        }
        Stats stats = queue.stats().block(WAIT);
        assertEquals(0, stats.stalled());
        assertEquals(1, stats.ready());
    }

    @Test
    void rowsLockedByAnotherTransactionAreSkippedAndReplacedSoTheBatchIsFull() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "skiplocked");
        List<String> all = IntStream.range(0, 10).mapToObj(i -> "k" + i).toList();
        queue.enqueueKeys(all).block(WAIT);

        // The three rows a claim would take first are held by a concurrent transaction.
        try (RowLock lock = RowLock.hold(Queues.table(prefix), queue.name(), "k0", "k1", "k2")) {
            List<Item<String>> items = claim(queue, 5);
            assertEquals(List.of("k3", "k4", "k5", "k6", "k7"), keys(items),
                    "a LIMIT applied before the lock would have returned a short batch");
            lock.release();
        }
        assertEquals(List.of("k0", "k1", "k2", "k8", "k9"), keys(claim(queue, 10)));
    }

    @Test
    void concurrentClaimersNeverShareAKey() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "fleet");
        List<String> all = IntStream.range(0, 200).mapToObj(i -> String.format("k%03d", i)).toList();
        queue.enqueueKeys(all).block(WAIT);

        Set<Integer> claimersThatGotWork = ConcurrentHashMap.newKeySet();
        List<String> claimed = Flux.range(0, 8)
                .flatMap(claimer -> queue.claim(3, LONG_LEASE)
                        .repeat()
                        .takeWhile(items -> !items.isEmpty())
                        .doOnNext(items -> claimersThatGotWork.add(claimer))
                        .flatMapIterable(items -> items), 8)
                .map(Item::key)
                .collectList()
                .block(Duration.ofSeconds(60));

        assertEquals(200, claimed.size(), "every item claimed exactly once, none twice");
        assertEquals(new HashSet<>(all), new HashSet<>(claimed));
        assertTrue(claimersThatGotWork.size() > 1, "the claimers overlapped");
        assertEquals(200L, TestDatabase.queryLong("SELECT count(*) FROM " + Queues.table(prefix)
                + " WHERE queue_name = $1 AND attempts = 1 AND lease_until > now()", queue.name()));
        assertFalse(queue.claim(10, LONG_LEASE).block(WAIT).iterator().hasNext());
    }
}
