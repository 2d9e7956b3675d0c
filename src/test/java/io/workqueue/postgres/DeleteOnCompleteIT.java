package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.r2dbc.spi.R2dbcException;
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
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * {@code deleteOnComplete(true)}: completing deletes the row at once. What the completing calls
 * count, what the other writers see afterwards, and that the lock order survives the switch.
 */
class DeleteOnCompleteIT {
    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final Duration LEASE = Duration.ofMinutes(5);
    private static String prefix;

    @BeforeAll
    static void createTable() {
        prefix = TestDatabase.createTable();
    }

    /** A fresh queue that deletes on complete; one write attempt, so a deadlock would surface. */
    private static ReactiveWorkQueue<String> deleting(String hint) {
        return Queues.fresh(prefix, hint, c -> c.deleteOnComplete(true).writeAttempts(1));
    }

    private static List<String> keys(List<Item<String>> items) {
        return items.stream().map(Item::key).toList();
    }

    private static boolean exists(ReactiveWorkQueue<String> queue, String key) {
        return Queues.exists(prefix, queue, key);
    }

    // ---------------------------------------------------------------- complete

    @Test
    void completeDeletesTheRowsAndCountsTheItemsItCompleted() {
        ReactiveWorkQueue<String> queue = deleting("complete");
        queue.enqueue(List.of(Entry.of("leased").withPriority(1), Entry.of("pending"), Entry.of("kept"))).block(WAIT);
        assertEquals(List.of("leased"), keys(queue.claim(1, LEASE).block(WAIT)));

        assertEquals(2L, queue.complete("leased", "pending", "unknown", "leased").block(WAIT),
                "counts items completed, not arguments");
        assertFalse(exists(queue, "leased"));
        assertFalse(exists(queue, "pending"));
        assertFalse(exists(queue, "unknown"), "an unknown key is not created");
        assertEquals(1L, Queues.rows(prefix, queue), "only the item not completed is left");
        assertEquals("true", Queues.column(prefix, queue, "kept", "completed_at IS NULL"));
    }

    @Test
    void completingTwiceCountsNothingTheSecondTime() {
        ReactiveWorkQueue<String> queue = deleting("twice");
        queue.enqueueKeys("a").block(WAIT);

        assertEquals(1L, queue.complete("a").block(WAIT));
        assertEquals(0L, queue.complete("a").block(WAIT));
        assertEquals(0L, queue.complete(List.of()).block(WAIT));
        assertEquals(0L, Queues.rows(prefix, queue));
    }

    /**
     * The group-committed complete credits each deleted row to the first caller that named it, as
     * it does marked rows: the merged statement still returns one row per item it completed. The
     * first write is parked behind a row lock so the later calls merge into the next one.
     */
    @Test
    void mergedCompletesEachCountTheItemsTheirOwnCallDeleted() {
        ReactiveWorkQueue<String> queue = deleting("merged");
        queue.enqueueKeys("blocker", "a", "b", "c").block(WAIT);
        CompletableFuture<Long> parked;
        CompletableFuture<Long> first;
        CompletableFuture<Long> overlapping;
        CompletableFuture<Long> unknown;
        try (RowLock lock = RowLock.hold(Queues.table(prefix), queue.name(), "blocker")) {
            parked = queue.complete("blocker").toFuture();
            lock.awaitWaiters(1);
            first = queue.complete("a", "b").toFuture();
            overlapping = queue.complete("b", "c").toFuture();
            unknown = queue.complete("nobody").toFuture();
            lock.release();
        }

        assertEquals(1L, Mono.fromFuture(parked).block(WAIT));
        assertEquals(2L, Mono.fromFuture(first).block(WAIT));
        assertEquals(1L, Mono.fromFuture(overlapping).block(WAIT), "b was credited to the first caller");
        assertEquals(0L, Mono.fromFuture(unknown).block(WAIT));
        assertEquals(0L, Queues.rows(prefix, queue));
    }

    /**
     * Rows a keeping instance completed (before the switch, or during a rolling one) are left to the
     * reaper: the deleting instance neither deletes nor counts them, and {@code reap()} still does
     * its job on them.
     */
    @Test
    void rowsCompletedWithoutTheModeAreLeftToTheReaper() {
        String name = TestDatabase.uniqueName("switch");
        ReactiveWorkQueue<String> keeping = Queues.over(TestDatabase.pool(), prefix, name, c -> c);
        ReactiveWorkQueue<String> deleting = Queues.over(TestDatabase.pool(), prefix, name,
                c -> c.deleteOnComplete(true).retention(Duration.ofMinutes(1)));
        keeping.enqueueKeys("old", "new").block(WAIT);
        assertEquals(1L, keeping.complete("old").block(WAIT));

        assertEquals(1L, deleting.complete("old", "new").block(WAIT), "only new was still to complete");
        assertTrue(exists(deleting, "old"));
        assertFalse(exists(deleting, "new"));
        assertEquals(1, deleting.stats().block(WAIT).completed(), "the kept row is still history");

        Queues.update(prefix, deleting, "old", "completed_at = now() - INTERVAL '1 hour'");
        assertEquals(1L, deleting.reap().block(WAIT));
        assertEquals(0L, Queues.rows(prefix, deleting));
    }

    // ---------------------------------------------------------------- completeAndClaim

    @Test
    void completeAndClaimDeletesWhatItCompletesAndLeasesTheNextBatch() {
        ReactiveWorkQueue<String> queue = deleting("cac");
        queue.enqueueKeys("a", "b", "c", "d", "e").block(WAIT);
        assertEquals(List.of("a", "b"), keys(queue.claim(2, LEASE).block(WAIT)));

        assertEquals(List.of("c", "d"), keys(queue.completeAndClaim(List.of("a", "b"), 2, LEASE).block(WAIT)));
        assertFalse(exists(queue, "a"));
        assertFalse(exists(queue, "b"));
        Stats stats = queue.stats().block(WAIT);
        assertEquals(Stats.of(3, 1, 2, 0, 0, stats.oldestReadyAge()), stats);
    }

    @Test
    void completeAndClaimNeverLeasesAKeyItIsDeletingEvenWhenItsLeaseLapsed() {
        ReactiveWorkQueue<String> queue = deleting("lapsed");
        queue.enqueueKeys("a", "b").block(WAIT);
        assertEquals(List.of("a"), keys(queue.claim(1, Duration.ofMillis(50)).block(WAIT)));
        Poll.until(WAIT, "a's lease to lapse", () -> queue.stats().block(WAIT).ready() == 2);

        // a sorts first and is due in the statement's snapshot, yet the statement deleting it must
        // not hand it out: the worker would be given an item whose row no longer exists.
        assertEquals(List.of("b"), keys(queue.completeAndClaim(List.of("a"), 10, LEASE).block(WAIT)));
        assertFalse(exists(queue, "a"));
        assertEquals(List.of(), queue.completeAndClaim(List.of("b"), 10, LEASE).block(WAIT));
        assertEquals(0L, Queues.rows(prefix, queue));
    }

    /**
     * Workers acknowledging through completeAndClaim while writers complete and release the same
     * keys in shuffled batches, with one write attempt: a lock cycle would surface as 40P01. Every
     * row ends deleted, and a key no writer released is leased exactly once.
     */
    @Test
    void concurrentWorkersAndWritersNeverDeadlockAndEveryRowIsGone() {
        ReactiveWorkQueue<String> queue = deleting("concurrent");
        List<String> all = IntStream.range(0, 2_000).mapToObj(i -> String.format("k%05d", i)).toList();
        queue.enqueueKeys(all).block(WAIT);
        Map<String, Integer> claims = new ConcurrentHashMap<>();
        Set<String> sqlStates = ConcurrentHashMap.newKeySet();

        Flux<Void> workers = Flux.range(0, 4).flatMap(w -> drain(queue, List.of(), claims).flux());
        Flux<Void> writers = Flux.range(0, 200).flatMap(i -> {
            List<String> batch = new ArrayList<>(all.subList((i * 37) % 1_900, (i * 37) % 1_900 + 50));
            Collections.shuffle(batch);
            Mono<Long> write = i % 2 == 0 ? queue.complete(batch) : queue.release(Duration.ZERO, null, batch);
            return write.onErrorResume(R2dbcException.class, e -> {
                sqlStates.add(e.getSqlState());
                return Mono.empty();
            }).then();
        }, 4);
        Flux.merge(workers, writers).then().block(Duration.ofMinutes(2));
        // Whatever the writers released may be due again: drain it.
        drain(queue, List.of(), claims).block(WAIT);

        assertTrue(sqlStates.isEmpty(), "SQLSTATEs seen: " + sqlStates);
        assertEquals(0L, Queues.rows(prefix, queue), "every key was completed, so every row is gone");
        // No writer touches the last 50 keys and no lease lapses: each was leased exactly once.
        List<Integer> untouched = all.subList(1_950, 2_000).stream().map(claims::get).distinct().toList();
        assertEquals(List.of(1), untouched);
    }

    /** completeAndClaim(previous batch) until a round leases nothing. */
    private static Mono<Void> drain(ReactiveWorkQueue<String> queue, List<String> finished, Map<String, Integer> claims) {
        return queue.completeAndClaim(finished, 50, LEASE)
                .onErrorResume(e -> Mono.error(new AssertionError("completeAndClaim failed", e)))
                .flatMap(items -> {
                    items.forEach(i -> claims.merge(i.key(), 1, Integer::sum));
                    if (items.isEmpty() && finished.isEmpty()) {
                        return Mono.empty();
                    }
                    return drain(queue, keys(items), claims);
                });
    }

    // ---------------------------------------------------------------- the other writers afterwards

    @Test
    void releaseAfterCompleteResurrectsNothing() {
        ReactiveWorkQueue<String> queue = deleting("resurrect");
        queue.enqueueKeys("a").block(WAIT);
        queue.claim(1, LEASE).block(WAIT);
        assertEquals(1L, queue.complete("a").block(WAIT));

        assertEquals(0L, queue.release(Duration.ZERO, new RuntimeException("late"), "a").block(WAIT));
        assertFalse(exists(queue, "a"), "a late release does not create the row again");
        assertEquals(List.of(), queue.claim(10, LEASE).block(WAIT));
        assertEquals(Stats.of(0, 0, 0, 0, 0, Duration.ZERO), queue.stats().block(WAIT));
    }

    @Test
    void reEnqueueAfterCompleteInsertsAfreshWithTheNewPriorityAndNoHistory() {
        ReactiveWorkQueue<String> queue = deleting("again");
        queue.enqueue(List.of(Entry.of("a").withPriority(5))).block(WAIT);
        queue.claim(1, LEASE).block(WAIT);
        queue.release(Duration.ZERO, new RuntimeException("boom"), "a").block(WAIT);
        assertEquals(List.of(Item.of("a", 5, 2, false)), queue.claim(1, LEASE).block(WAIT));
        assertEquals(1L, queue.complete("a").block(WAIT));

        // Lower than before: a restart takes the new priority outright, and so does a fresh insert.
        queue.enqueue(List.of(Entry.of("a").withPriority(1))).block(WAIT);
        assertEquals("1", Queues.column(prefix, queue, "a", "priority"));
        assertEquals("0", Queues.column(prefix, queue, "a", "attempts"));
        assertEquals("true", Queues.column(prefix, queue, "a", "last_error IS NULL AND lease_until = 'epoch'"));
        assertEquals(List.of(Item.of("a", 1, 1, false)), queue.claim(1, LEASE).block(WAIT));
    }

    @Test
    void reEnqueueAfterCompleteTakesTheNewDelay() {
        ReactiveWorkQueue<String> queue = deleting("again-delay");
        queue.enqueueKeys("a").block(WAIT);
        assertEquals(1L, queue.complete("a").block(WAIT));

        queue.enqueue(List.of(Entry.of("a").withDelay(Duration.ofHours(1)))).block(WAIT);
        assertEquals(List.of(), queue.claim(1, LEASE).block(WAIT));
        assertEquals("true", Queues.column(prefix, queue, "a", "available_at > now() + INTERVAL '59 minutes'"));
    }

    // ---------------------------------------------------------------- stats

    @Test
    void statsCountNothingCompletedAndPendingDrops() {
        ReactiveWorkQueue<String> queue = deleting("stats");
        queue.enqueueKeys("a", "b", "c").block(WAIT);
        assertEquals(3, queue.stats().block(WAIT).pending());
        queue.claim(1, LEASE).block(WAIT);

        assertEquals(2L, queue.complete("a", "b").block(WAIT));
        Stats stats = queue.stats().block(WAIT);
        assertEquals(Stats.of(1, 1, 0, 0, 0, stats.oldestReadyAge()), stats);
        assertEquals(0L, queue.reap().block(WAIT), "nothing is left for the reaper");
    }
}
