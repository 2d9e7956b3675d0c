package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.r2dbc.spi.Connection;
import io.workqueue.Entry;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkQueueMeters;
import io.workqueue.testing.Queues;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * An enqueue that lands while its key is leased is never lost: completing that lease runs the key
 * once more, however many enqueues arrived during it; without one, {@code complete} stands.
 */
class EnqueueDuringLeaseIT {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final Duration LEASE = Duration.ofMinutes(5);
    private static String prefix;

    @BeforeAll
    static void createTable() {
        prefix = TestDatabase.createTable();
    }

    private static List<String> keys(List<Item<String>> items) {
        return items.stream().map(Item::key).toList();
    }

    private static List<String> claimKeys(ReactiveWorkQueue<String> queue) {
        return keys(queue.claim(100, LEASE).block(WAIT));
    }

    /** Enqueues {@code key}, leases it, and enqueues it again while the lease is live. */
    private static void leaseThenEnqueueAgain(ReactiveWorkQueue<String> queue, String key) {
        queue.enqueueKeys(key).block(WAIT);
        assertEquals(List.of(key), claimKeys(queue));
        queue.enqueueKeys(key).block(WAIT);
    }

    @Test
    void anEnqueueDuringTheLeaseMakesTheCompleteRunTheKeyOnceMore() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "during");
        queue.enqueueKeys("tile").block(WAIT);
        assertEquals(List.of("tile"), claimKeys(queue));

        queue.enqueueKeys("tile").block(WAIT); // the data behind "tile" changed while it rendered

        assertEquals(0L, queue.complete("tile").block(WAIT), "re-requested: not completed");
        List<Item<String>> again = queue.claim(10, LEASE).block(WAIT);
        assertEquals(List.of("tile"), keys(again));
        assertFalse(again.get(0).reclaimed(), "the lease was handed back, not lapsed");
        assertEquals(1, again.get(0).attempts(), "a fresh run: attempts start again");
        assertEquals(1L, queue.complete("tile").block(WAIT));
        assertEquals(List.of(), claimKeys(queue));
    }

    /**
     * A worker whose complete failed ambiguously (the connection dropped after the statement
     * committed) sends it again: the retry must not complete the item the first attempt handed
     * back, or the run the enqueue asked for is lost after all.
     */
    @Test
    void aCompleteRetriedAfterItHandedTheKeyBackLeavesTheRunOwed() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "retried");
        leaseThenEnqueueAgain(queue, "k");
        assertEquals(0L, queue.complete("k").block(WAIT));

        assertEquals(0L, queue.complete("k").block(WAIT), "the retry leaves the handed-back item alone");
        assertEquals(List.of(), keys(queue.completeAndClaim(List.of("k"), 10, LEASE).block(WAIT)),
                "a retried completeAndClaim leaves it too (and cannot claim a key it names)");
        assertEquals("t", Queues.column(prefix, queue, "k", "completed_at IS NULL")
                .substring(0, 1), "still owed");
        assertEquals(List.of("k"), claimKeys(queue));
        assertEquals(1L, queue.complete("k").block(WAIT), "once it ran again, its complete stands");
    }

    @Test
    void manyEnqueuesDuringOneLeaseMakeExactlyOneMoreRun() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "many");
        queue.enqueueKeys("k").block(WAIT);
        assertEquals(List.of("k"), claimKeys(queue));
        for (int i = 0; i < 5; i++) {
            queue.enqueueKeys("k").block(WAIT);
        }
        Flux.range(0, 200).flatMap(i -> queue.enqueueKeys("k")).blockLast(WAIT);

        assertEquals(0L, queue.complete("k").block(WAIT));
        assertEquals(List.of("k"), claimKeys(queue));
        assertEquals(1L, queue.complete("k").block(WAIT));
        assertEquals(List.of(), claimKeys(queue));
    }

    @Test
    void withoutAnEnqueueDuringTheLeaseCompleteStands() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "none");
        queue.enqueueKeys("k").block(WAIT);
        queue.enqueueKeys("k").block(WAIT); // before the claim: merged, as always
        assertEquals(List.of("k"), claimKeys(queue));

        assertEquals(1L, queue.complete("k").block(WAIT));
        assertEquals(List.of(), claimKeys(queue));
        assertEquals("null", Queues.column(prefix, queue, "k", "requested_at"));
    }

    @Test
    void concurrentGroupCommittedEnqueuesDuringLeasesEachBringTheirKeyBack() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "group");
        List<String> all = IntStream.range(0, 300).mapToObj(i -> "g" + i).toList();
        queue.enqueueKeys(all).block(WAIT);
        assertEquals(300, queue.claim(300, LEASE).block(WAIT).size());
        List<String> again = all.subList(0, 200);

        // Single-key callers, merged by the group commit into few statements.
        Flux.fromIterable(again).flatMap(queue::enqueueKeys, 256).blockLast(WAIT);

        assertEquals(100L, queue.complete(all).block(WAIT), "only the 100 not enqueued again completed");
        assertEquals(new TreeSet<>(again), new TreeSet<>(keys(queue.claim(300, LEASE).block(WAIT))));
    }

    @Test
    void aTransactionalEnqueueDuringTheLeaseCountsOnceCommittedAndNotIfRolledBack() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "tx");
        queue.enqueueKeys("kept", "dropped").block(WAIT);
        assertEquals(2, queue.claim(10, LEASE).block(WAIT).size());

        inTransaction(c -> queue.enqueue(c, List.of(Entry.of("kept"))), true);
        inTransaction(c -> queue.enqueue(c, List.of(Entry.of("dropped"))), false);

        assertEquals(1L, queue.complete("kept", "dropped").block(WAIT), "only the rolled-back one completed");
        assertEquals(List.of("kept"), claimKeys(queue));
    }

    private static void inTransaction(Function<Connection, Mono<Void>> work, boolean commit) {
        Mono.usingWhen(TestDatabase.plain().create(),
                        c -> Mono.from(c.beginTransaction())
                                .then(work.apply(c))
                                .then(Mono.from(commit ? c.commitTransaction() : c.rollbackTransaction())),
                        Connection::close)
                .block(WAIT);
    }

    @Test
    void aDeleteOnCompleteQueueKeepsAReRequestedItemAndDeletesItAfterItsNextRun() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "delete", c -> c.deleteOnComplete(true));
        leaseThenEnqueueAgain(queue, "k");

        assertEquals(0L, queue.complete("k").block(WAIT));
        assertTrue(Queues.exists(prefix, queue, "k"), "kept for its next run");
        assertEquals(List.of("k"), claimKeys(queue));
        assertEquals(1L, queue.complete("k").block(WAIT));
        assertFalse(Queues.exists(prefix, queue, "k"));
    }

    @Test
    void completeAndClaimHandsTheReRequestedKeyBackForTheNextClaim() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "cac");
        leaseThenEnqueueAgain(queue, "k");

        // One statement, one snapshot: it cannot claim the row it re-arms, the next claim does.
        assertEquals(List.of(), keys(queue.completeAndClaim(List.of("k"), 10, LEASE).block(WAIT)));
        assertEquals(List.of("k"), claimKeys(queue));
    }

    @Test
    void aReleaseFollowsItsOwnDelayAndClearsTheMark() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "release");
        leaseThenEnqueueAgain(queue, "k");

        assertEquals(1L, queue.release(Duration.ofHours(1), new IllegalStateException("later"), "k").block(WAIT));

        assertEquals("null", Queues.column(prefix, queue, "k", "requested_at"));
        assertEquals("true", Queues.column(prefix, queue, "k", "available_at > now() + INTERVAL '59 minutes'"));
        assertEquals(List.of(), claimKeys(queue));
    }

    @Test
    void aLapsedLeaseKeepsTheMarkSoTheReclaimersCompleteRunsTheKeyOnceMore() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "lapse");
        leaseThenEnqueueAgain(queue, "k");
        // The lease lapses (on the database clock, moved here rather than waited for).
        Queues.update(prefix, queue, "k", "lease_until = now() - INTERVAL '1 second'");

        List<Item<String>> reclaimed = Queues.over(TestDatabase.pool(), prefix, queue.name(), c -> c)
                .claim(10, LEASE).block(WAIT);
        assertEquals(List.of("k"), keys(reclaimed));
        assertTrue(reclaimed.get(0).reclaimed());
        assertEquals("false", Queues.column(prefix, queue, "k", "requested_at IS NULL"));
        assertEquals(0L, queue.complete("k").block(WAIT));
        assertEquals(List.of("k"), claimKeys(queue));
    }

    @Test
    void theReRunComesAtTheAvailabilityTheEnqueueAskedForWithThePriorityRaised() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "delayed");
        queue.enqueue(Entry.of("soon").withPriority(1), Entry.of("late")).block(WAIT);
        assertEquals(2, queue.claim(10, LEASE).block(WAIT).size());
        queue.enqueue(Entry.of("soon").withPriority(9)).block(WAIT);
        queue.enqueue(Entry.of("late").withDelay(Duration.ofHours(1))).block(WAIT);
        queue.enqueue(Entry.of("late").withDelay(Duration.ofHours(2))).block(WAIT); // the earliest ask wins

        assertEquals(0L, queue.complete("soon", "late").block(WAIT));

        List<Item<String>> next = queue.claim(10, LEASE).block(WAIT);
        assertEquals(List.of("soon"), keys(next));
        assertEquals(9, next.get(0).priority());
        assertEquals("true", Queues.column(prefix, queue, "late",
                "available_at BETWEEN now() + INTERVAL '59 minutes' AND now() + INTERVAL '61 minutes'"));
    }

    @Test
    void theCompletedCounterSkipsReRunsAndTheRequeueCounterCountsThem() {
        String name = TestDatabase.uniqueName("meters");
        MeterRegistry registry = new SimpleMeterRegistry();
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(TestDatabase.pool(), String.class)
                .config(WorkQueueConfig.builder(name).tablePrefix(prefix).build())
                .meterRegistry(registry)
                .build();
        queue.enqueueKeys("a", "b", "c").block(WAIT);
        assertEquals(3, queue.claim(10, LEASE).block(WAIT).size());
        queue.enqueueKeys("a").block(WAIT);

        assertEquals(1L, queue.complete("a", "b").block(WAIT), "b completes, a runs again");
        assertEquals(List.of("a"), keys(queue.completeAndClaim(List.of("c"), 10, LEASE).block(WAIT)),
                "c completes; the claim leases the re-armed a");

        assertEquals(2.0, registry.get(WorkQueueMeters.COMPLETED).tag(WorkQueueMeters.QUEUE_TAG, name).counter().count());
        assertEquals(1.0, registry.get(WorkQueueMeters.REQUEUED_DURING_LEASE).tag(WorkQueueMeters.QUEUE_TAG, name)
                .counter().count());
    }
}
