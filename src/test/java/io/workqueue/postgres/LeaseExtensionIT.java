package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.workqueue.InvalidKeyException;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkQueueMeters;
import io.workqueue.testing.CountingConnectionFactory;
import io.workqueue.testing.ExpectedLogs;
import io.workqueue.testing.Poll;
import io.workqueue.testing.Queues;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Set;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import reactor.core.publisher.Flux;

/**
 * extend and snooze: they act only for the holder of an item's latest claim, on the database
 * clock, and a straggler whose lease lapsed touches nothing of the new holder's.
 */
@ExtendWith(ExpectedLogs.class)
class LeaseExtensionIT {
    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final Duration LEASE = Duration.ofMinutes(5);
    private static String prefix;

    @BeforeAll
    static void createTable() {
        prefix = TestDatabase.createTable();
    }

    private static Item<String> claimOne(ReactiveWorkQueue<String> queue, Duration lease) {
        List<Item<String>> items = queue.claim(1, lease).block(WAIT);
        assertEquals(1, items.size(), "one item claimed");
        return items.get(0);
    }

    private static void lapse(ReactiveWorkQueue<String> queue, String key) {
        Queues.update(prefix, queue, key, "lease_until = now() - INTERVAL '1 second'");
    }

    private static String leaseLeftSeconds(ReactiveWorkQueue<String> queue, String key) {
        return Queues.column(prefix, queue, key, "round(EXTRACT(EPOCH FROM lease_until - now()))::int");
    }

    @Test
    void anExtendedLeaseIsNotReclaimedWhileExtendedAndIsOneLeaseAfterTheExtensionsStop() {
        ReactiveWorkQueue<String> holder = Queues.fresh(prefix, "extend-held");
        ReactiveWorkQueue<String> other = Queues.over(TestDatabase.pool(), prefix, holder.name(), c -> c);
        holder.enqueueKeys("long").block(WAIT);
        Duration lease = Duration.ofSeconds(2);
        Item<String> item = claimOne(holder, lease);
        assertTrue(item.claimedAt().isPresent(), "a claimed item carries its claim");

        for (int i = 0; i < 3; i++) {
            assertEquals(Set.of("long"), holder.extend(lease, List.of(item)).block(WAIT));
            assertEquals(List.of(), other.claim(10, LEASE).block(WAIT), "an extended lease is not handed out");
        }
        // A long extension is as good as a long lease, on the database clock.
        assertEquals(Set.of("long"), holder.extend(Duration.ofHours(1), List.of(item)).block(WAIT));
        assertEquals("3600", leaseLeftSeconds(holder, "long"));
        // The holder stops extending (it died): a short extension, then nothing.
        assertEquals(Set.of("long"), holder.extend(Duration.ofMillis(300), List.of(item)).block(WAIT));
        Item<String> taken = Poll.until(WAIT, "the item lapses one lease after the last extension",
                () -> other.claim(10, LEASE).block(WAIT), items -> !items.isEmpty()).get(0);
        assertEquals("long", taken.key());
        assertTrue(taken.reclaimed(), "handed out again as a reclaim");
        assertEquals(2, taken.attempts());
    }

    @Test
    void aStragglersExtensionAfterAReclaimIsRefusedAndTheNewHoldersLeaseIsUntouched() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        ReactiveWorkQueue<String> straggler = ReactiveWorkQueue.builder(TestDatabase.pool(), String.class)
                .config(WorkQueueConfig.builder(TestDatabase.uniqueName("straggler")).tablePrefix(prefix).build())
                .meterRegistry(registry)
                .build();
        ReactiveWorkQueue<String> newHolder = Queues.over(TestDatabase.pool(), prefix, straggler.name(), c -> c);
        straggler.enqueueKeys("k").block(WAIT);
        Item<String> old = claimOne(straggler, LEASE);
        lapse(straggler, "k");
        Item<String> current = claimOne(newHolder, Duration.ofMinutes(7));
        String leaseBefore = Queues.column(prefix, straggler, "k", "lease_until");

        assertEquals(Set.of(), straggler.extend(Duration.ofHours(1), List.of(old)).block(WAIT));
        assertEquals(Set.of(), straggler.snooze(Duration.ZERO, List.of(old)).block(WAIT));
        assertEquals(leaseBefore, Queues.column(prefix, straggler, "k", "lease_until"), "the new holder's lease stands");
        assertEquals("2", Queues.column(prefix, straggler, "k", "attempts"));
        assertEquals(0.0, registry.counter(WorkQueueMeters.EXTENSIONS, WorkQueueMeters.QUEUE_TAG, straggler.name()).count());
        assertEquals(1.0, registry.counter(WorkQueueMeters.EXTENSIONS_REFUSED, WorkQueueMeters.QUEUE_TAG,
                straggler.name()).count());
        assertEquals(Set.of("k"), newHolder.extend(LEASE, List.of(current)).block(WAIT), "the holder still extends");
    }

    @Test
    void aLapsedLeaseNobodyClaimedIsNotExtendedEither() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "extend-lapsed");
        queue.enqueueKeys("k").block(WAIT);
        Item<String> item = claimOne(queue, LEASE);
        lapse(queue, "k");
        assertEquals(Set.of(), queue.extend(LEASE, List.of(item)).block(WAIT), "not the caller's any more");
        assertTrue(claimOne(queue, LEASE).reclaimed());
    }

    @Test
    void anExtensionTellsTwoClaimsAtTheSameAttemptApart() {
        // attempts start over when a completed item is enqueued again (here: enqueued during the
        // new holder's lease, so its completion hands it back with attempts 0): the straggler's
        // claim and the latest have the same attempts, and only the claim's instant differs.
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "extend-generation");
        queue.enqueueKeys("k").block(WAIT);
        Item<String> straggler = claimOne(queue, LEASE);
        lapse(queue, "k");
        claimOne(queue, LEASE);
        queue.enqueueKeys("k").block(WAIT);
        assertEquals(0L, queue.complete("k").block(WAIT), "handed back to run again");
        Item<String> latest = claimOne(queue, LEASE);
        assertEquals(straggler.attempts(), latest.attempts(), "the same attempt");

        assertEquals(Set.of(), queue.extend(Duration.ofHours(2), List.of(straggler)).block(WAIT));
        assertEquals(Set.of("k"), queue.extend(Duration.ofHours(2), List.of(latest)).block(WAIT));
    }

    @Test
    void manyConcurrentExtensionsShareStatements() {
        CountingConnectionFactory counting = new CountingConnectionFactory(TestDatabase.pool());
        String name = TestDatabase.uniqueName("extend-merged");
        ReactiveWorkQueue<String> queue = Queues.over(counting, prefix, name, c -> c);
        int n = 200;
        queue.enqueueKeys(IntStream.range(0, n).mapToObj(i -> "k" + i).toList()).block(WAIT);
        List<Item<String>> items = queue.claim(n, LEASE).block(WAIT);
        assertEquals(n, items.size());
        int before = counting.creates();

        List<Set<String>> answers = Flux.fromIterable(items)
                .flatMap(item -> queue.extend(Duration.ofHours(1), List.of(item)), n)
                .collectList().block(WAIT);

        assertEquals(n, answers.size());
        answers.forEach(extended -> assertEquals(1, extended.size(), "each caller gets its own key back"));
        int statements = counting.creates() - before;
        assertTrue(statements <= n / 10, n + " concurrent extensions took " + statements + " statements");
        assertEquals(String.valueOf(n), TestDatabase.queryString("SELECT count(*) FROM " + Queues.table(prefix)
                + " WHERE queue_name = $1 AND lease_until > now() + INTERVAL '50 minutes'", name));
    }

    @Test
    void cancellingAnExtensionAtAnyPointLeavesNoLeaseHalfExtended() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "extend-cancel");
        int n = 50;
        queue.enqueueKeys(IntStream.range(0, n).mapToObj(i -> "k" + i).toList()).block(WAIT);
        List<Item<String>> items = queue.claim(n, LEASE).block(WAIT);
        java.util.Random random = new java.util.Random(42);
        for (int round = 0; round < 40; round++) {
            reactor.core.Disposable call = queue.extend(Duration.ofMinutes(10 + round), items).subscribe();
            // Cancelled before it is submitted, while it waits, while its statement runs, or after.
            java.util.concurrent.locks.LockSupport.parkNanos(random.nextInt(3_000_000));
            call.dispose();
            assertEquals(1L, TestDatabase.queryLong("SELECT count(DISTINCT lease_until) FROM " + Queues.table(prefix)
                    + " WHERE queue_name = $1", queue.name()), "every lease as one statement left it, round " + round);
        }
        assertEquals(Set.copyOf(items.stream().map(Item::key).toList()),
                queue.extend(LEASE, items).block(WAIT), "and the holder still holds them all");
    }

    @Test
    void aSnoozeHandsBackWithoutCountingTheAttemptAndKeepsTheLastError() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "snooze");
        queue.enqueueKeys("k").block(WAIT);
        queue.release(Duration.ZERO, new IllegalStateException("first failure"), List.of(claimOne(queue, LEASE).key()))
                .block(WAIT);
        Item<String> second = claimOne(queue, LEASE);
        assertEquals(2, second.attempts());
        queue.enqueueKeys("k").block(WAIT); // during the lease: absorbed by the snooze

        assertEquals(Set.of("k"), queue.snooze(Duration.ofHours(1), List.of(second)).block(WAIT));

        assertEquals("1", Queues.column(prefix, queue, "k", "attempts"), "the snoozed attempt is not counted");
        assertEquals("first failure", Queues.column(prefix, queue, "k", "last_error"));
        assertEquals("true", Queues.column(prefix, queue, "k", "lease_until = 'epoch' AND requested_at IS NULL"));
        assertEquals("3600", Queues.column(prefix, queue, "k", "round(EXTRACT(EPOCH FROM available_at - now()))::int"));
        assertEquals(List.of(), queue.claim(1, LEASE).block(WAIT), "not due until the snooze ends");
        Queues.update(prefix, queue, "k", "available_at = now()");
        Item<String> third = claimOne(queue, LEASE);
        assertEquals(2, third.attempts());
        assertEquals(false, third.reclaimed(), "a snooze is not a lapse");
    }

    @Test
    void badArgumentsFailOnlyTheirOwnCall() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "extend-bad");
        queue.enqueueKeys("k").block(WAIT);
        Item<String> item = claimOne(queue, LEASE);
        Item<String> unclaimed = Item.of("k", 0, 1, false);
        Item<String> otherClaim = item.withClaimedAt(item.claimedAt().orElseThrow().plusSeconds(1));

        assertThrows(IllegalArgumentException.class, () -> queue.extend(Duration.ZERO, List.of(item)).block(WAIT));
        assertThrows(IllegalArgumentException.class, () -> queue.extend(Duration.ofNanos(999), List.of(item)).block(WAIT));
        assertThrows(IllegalArgumentException.class,
                () -> queue.extend(ReactiveWorkQueue.MAX_DURATION.plusSeconds(1), List.of(item)).block(WAIT));
        assertThrows(IllegalArgumentException.class, () -> queue.extend(LEASE, List.of(unclaimed)).block(WAIT));
        assertThrows(IllegalArgumentException.class, () -> queue.extend(LEASE, List.of(item, otherClaim)).block(WAIT));
        assertThrows(IllegalArgumentException.class, () -> queue.snooze(Duration.ofSeconds(-1), List.of(item)).block(WAIT));
        assertThrows(IllegalArgumentException.class, () -> queue.extend(null, List.of(item)).block(WAIT),
                "as claim does");
        assertThrows(NullPointerException.class, () -> queue.extend(LEASE, null).block(WAIT));
        List<Item<String>> withNull = new java.util.ArrayList<>();
        withNull.add(null);
        assertThrows(NullPointerException.class, () -> queue.extend(LEASE, withNull).block(WAIT));
        Item<String> badKey = Item.of("nul\0", 0, 1, false).withClaimedAt(Instant.now());
        assertInstanceOf(InvalidKeyException.class,
                assertThrows(RuntimeException.class, () -> queue.extend(LEASE, List.of(badKey)).block(WAIT)));

        // Nothing was touched, and the holder's own extension still works.
        assertEquals("300", leaseLeftSeconds(queue, "k"));
        assertEquals(Set.of("k"), queue.extend(LEASE, List.of(item, item)).block(WAIT), "named twice, one claim");
        assertEquals(Set.of(), queue.extend(LEASE, List.of()).block(WAIT));
    }
}
