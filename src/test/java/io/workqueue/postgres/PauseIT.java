package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.Stats;
import io.workqueue.WorkQueueAdmin;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkQueueMeters;
import io.workqueue.WorkerOptions;
import io.workqueue.testing.Poll;
import io.workqueue.testing.Queues;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;

/**
 * Pause and resume, fleet-wide and stored: while a queue is paused no instance's claims lease
 * anything, enqueues still land, and every reading says it is paused.
 */
class PauseIT {
    private static final Duration WAIT = Duration.ofSeconds(20);
    private static final Duration LEASE = Duration.ofMinutes(5);
    private static String prefix;

    @BeforeAll
    static void createTable() {
        prefix = TestDatabase.createTable();
    }

    private static WorkQueueAdmin admin() {
        return WorkQueueAdmin.builder(TestDatabase.pool()).tablePrefix(prefix).build();
    }

    @Test
    void aPauseStopsEveryInstancesClaimsWithinAPollAndResumedWorkDrains() {
        ReactiveWorkQueue<String> first = Queues.fresh(prefix, "pause-fleet");
        ReactiveWorkQueue<String> second = Queues.over(TestDatabase.pool(), prefix, first.name(), c -> c);
        WorkQueueAdmin admin = admin();
        Set<String> done = ConcurrentHashMap.newKeySet();
        WorkerOptions options = WorkerOptions.builder().lease(LEASE).poll(Duration.ofMillis(100)).build();
        // Two instances work the queue; with many more items than one claim.
        Disposable workers = reactor.core.Disposables.composite(
                first.process(item -> reactor.core.publisher.Mono.empty(), options).subscribe(item -> done.add(item.key())),
                second.process(item -> reactor.core.publisher.Mono.empty(), options).subscribe(item -> done.add(item.key())));
        try {
            first.enqueueKeys("warm-up").block(WAIT);
            Poll.until(WAIT, "the workers run", () -> done.contains("warm-up"));

            Instant pausedAt = admin.pause(first.name()).block(WAIT);
            int n = 500;
            first.enqueueKeys(IntStream.range(0, n).mapToObj(i -> "k" + i).toList()).block(WAIT);
            // Enqueues land, nothing is handed out (a claim in flight at the pause may still finish,
            // but nothing enqueued after it can be claimed).
            Poll.during(Duration.ofSeconds(1), "nothing is claimed while paused",
                    () -> done.stream().noneMatch(key -> key.startsWith("k")));
            Stats stats = second.stats().block(WAIT);
            assertEquals(n, stats.ready());
            assertEquals(pausedAt, stats.pausedAt().orElseThrow(), "stats say since when");
            assertEquals(pausedAt, admin.pause(first.name()).block(WAIT), "pausing again keeps the first pause");

            assertTrue(admin.resume(first.name()).block(WAIT));
            assertFalse(admin.resume(first.name()).block(WAIT), "not paused any more");
            Poll.until(WAIT, "resumed work drains", () -> done.size() == n + 1);
            assertFalse(first.stats().block(WAIT).paused());
        } finally {
            workers.dispose();
        }
    }

    @Test
    void aPauseIsStoredSoItSurvivesRestartsAndReachesTheGauges() {
        String name = TestDatabase.uniqueName("pause-stored");
        admin().pause(name).block(WAIT); // a queue with no row yet
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        // A process starting now, its queue and its admin new.
        ReactiveWorkQueue<String> restarted = ReactiveWorkQueue.builder(TestDatabase.pool(), String.class)
                .config(WorkQueueConfig.builder(name).tablePrefix(prefix).build())
                .meterRegistry(registry)
                .build();
        restarted.enqueueKeys("a", "b").block(WAIT);
        assertEquals(List.of(), restarted.claim(10, LEASE).block(WAIT));
        assertEquals(List.of(), restarted.completeAndClaim(List.of(), 10, LEASE).block(WAIT));
        assertTrue(admin().stats(name).block(WAIT).paused());
        restarted.stats().block(WAIT);
        assertEquals(1.0, registry.get(WorkQueueMeters.PAUSED).gauge().value());
        // A housekeeping round reads the pause too, so gauges of instances that keep no house follow.
        assertTrue(restarted.housekeep(Duration.ofSeconds(30)).block(WAIT).stats().paused());

        admin().resume(name).block(WAIT);
        List<Item<String>> claimed = restarted.claim(10, LEASE).block(WAIT);
        assertEquals(2, claimed.size());
        restarted.stats().block(WAIT);
        assertEquals(0.0, registry.get(WorkQueueMeters.PAUSED).gauge().value());
    }

    @Test
    void leasesHeldAtThePauseRunOnAndTheirWritesStillWork() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "pause-held");
        queue.enqueueKeys("held", "released").block(WAIT);
        List<Item<String>> items = queue.claim(2, LEASE).block(WAIT);
        admin().pause(queue.name()).block(WAIT);
        assertEquals(Set.of("held", "released"), queue.extend(LEASE, items).block(WAIT));
        assertEquals(1L, queue.complete("held").block(WAIT));
        assertEquals(1L, queue.release(Duration.ZERO, null, "released").block(WAIT));
        assertEquals(List.of(), queue.claim(2, LEASE).block(WAIT), "released, but paused");
        admin().resume(queue.name()).block(WAIT);
        assertEquals(List.of("released"), queue.claim(2, LEASE).block(WAIT).stream().map(Item::key).toList());
    }

    @Test
    void badQueueNamesFailTheirOwnCall() {
        WorkQueueAdmin admin = admin();
        assertThrows(NullPointerException.class, () -> admin.pause(null).block(WAIT));
        assertThrows(IllegalArgumentException.class, () -> admin.pause("").block(WAIT));
        assertThrows(IllegalArgumentException.class,
                () -> admin.resume("x".repeat(WorkQueueConfig.MAX_NAME_LENGTH + 1)).block(WAIT));
    }
}
