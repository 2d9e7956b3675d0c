package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.workqueue.Entry;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.Stats;
import io.workqueue.testing.Queues;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Enqueueing a key that is already in the queue: outstanding items only gain, completed ones restart. */
class ReEnqueueIT {
    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final Duration LEASE = Duration.ofMinutes(5);
    private static String prefix;

    @BeforeAll
    static void createTable() {
        prefix = TestDatabase.createTable();
    }

    private static String column(ReactiveWorkQueue<String> queue, String key, String expression) {
        return Queues.column(prefix, queue, key, expression);
    }

    @Test
    void priorityOnlyRises() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "priority");
        queue.enqueue(Entry.of("a").withPriority(5)).block(WAIT);

        queue.enqueue(Entry.of("a").withPriority(1)).block(WAIT);
        assertEquals("5", column(queue, "a", "priority"));
        queue.enqueue(Entry.of("a").withPriority(9)).block(WAIT);
        assertEquals("9", column(queue, "a", "priority"));
        queue.enqueueKeys("a").block(WAIT);
        assertEquals("9", column(queue, "a", "priority"));
        assertEquals(List.of(Item.of("a", 9, 1, false)), queue.claim(1, LEASE).block(WAIT));
    }

    @Test
    void availabilityOnlyMovesEarlier() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "availability");
        queue.enqueue(Entry.of("a").withDelay(Duration.ofHours(1))).block(WAIT);
        String firstAvailability = column(queue, "a", "available_at");

        queue.enqueue(Entry.of("a").withDelay(Duration.ofHours(2))).block(WAIT);
        assertEquals(firstAvailability, column(queue, "a", "available_at"), "a later availability is ignored");
        assertEquals(List.of(), queue.claim(1, LEASE).block(WAIT));

        queue.enqueue(Entry.of("a").withDelay(Duration.ofMinutes(30))).block(WAIT);
        assertEquals("true", column(queue, "a", "available_at < '" + firstAvailability + "'::timestamptz"));
        queue.enqueueKeys("a").block(WAIT);
        assertEquals(List.of("a"), queue.claim(1, LEASE).block(WAIT).stream().map(Item::key).toList());
    }

    @Test
    void attemptsAndLastErrorAreKept() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "kept");
        queue.enqueueKeys("a").block(WAIT);
        queue.claim(1, LEASE).block(WAIT);
        queue.release(Duration.ofHours(1), new RuntimeException("boom"), "a").block(WAIT);

        queue.enqueue(Entry.of("a").withPriority(3)).block(WAIT);
        assertEquals("1", column(queue, "a", "attempts"));
        assertEquals("boom", column(queue, "a", "last_error"));
        assertEquals(List.of(Item.of("a", 3, 2, false)), queue.claim(1, LEASE).block(WAIT),
                "the re-enqueue moved availability earlier but kept the attempt count");
    }

    @Test
    void aLiveLeaseIsNotRevoked() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "lease");
        queue.enqueueKeys("a").block(WAIT);
        queue.claim(1, LEASE).block(WAIT);
        String leaseUntil = column(queue, "a", "lease_until");

        queue.enqueue(Entry.of("a").withPriority(100)).block(WAIT);
        assertEquals(leaseUntil, column(queue, "a", "lease_until"));
        assertEquals("100", column(queue, "a", "priority"));
        assertEquals(List.of(), queue.claim(1, LEASE).block(WAIT), "the worker holding it keeps it");
        assertEquals(1, queue.stats().block(WAIT).leased());
    }

    @Test
    void reEnqueueingACompletedItemRestartsItWithTheNewPriorityOutright() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "restart");
        queue.enqueue(Entry.of("a").withPriority(5)).block(WAIT);
        queue.claim(1, LEASE).block(WAIT);
        queue.release(Duration.ZERO, new RuntimeException("boom"), "a").block(WAIT);
        queue.claim(1, LEASE).block(WAIT);
        queue.complete("a").block(WAIT);
        // complete clears the last error itself; put one back so the restart has something to clear.
        Queues.update(prefix, queue, "a", "last_error = 'stale'");

        queue.enqueue(Entry.of("a").withPriority(1)).block(WAIT);
        assertEquals("1", column(queue, "a", "priority"), "a lower priority is taken outright");
        assertEquals("0", column(queue, "a", "attempts"));
        assertEquals("true", column(queue, "a", "last_error IS NULL"));
        assertEquals("true", column(queue, "a", "completed_at IS NULL"));
        assertEquals("true", column(queue, "a", "lease_until = 'epoch'"));
        Stats stats = queue.stats().block(WAIT);
        assertEquals(Stats.of(1, 1, 0, 0, 0, stats.oldestReadyAge()), stats);
        assertEquals(List.of(Item.of("a", 1, 1, false)), queue.claim(1, LEASE).block(WAIT));
    }

    @Test
    void reEnqueueingACompletedItemTakesTheNewDelayOutright() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "restart-delay");
        queue.enqueueKeys("a").block(WAIT);
        queue.complete("a").block(WAIT);
        String firstEnqueue = column(queue, "a", "enqueued_at");

        queue.enqueue(Entry.of("a").withDelay(Duration.ofHours(1))).block(WAIT);
        assertEquals("true", column(queue, "a", "available_at - enqueued_at = INTERVAL '1 hour'"),
                "a later availability is taken outright");
        assertEquals("true", column(queue, "a", "enqueued_at > '" + firstEnqueue + "'::timestamptz"),
                "the restart is a new enqueue");
        assertEquals(List.of(), queue.claim(1, LEASE).block(WAIT));
        assertEquals(1, queue.stats().block(WAIT).pending());
    }
}
