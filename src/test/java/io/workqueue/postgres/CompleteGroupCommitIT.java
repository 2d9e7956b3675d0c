package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.MeterRegistry;
import io.r2dbc.spi.Connection;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkQueueMeters;
import io.workqueue.testing.Poll;
import io.workqueue.testing.Queues;
import io.workqueue.testing.RowLock;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * The group-committed {@code complete}: concurrent calls share one lock-ordered statement, each
 * caller still counts only the items its own call completed, a cancelled caller does not cancel the
 * shared write, and {@code close()} waits for completes already submitted without refusing later
 * ones.
 *
 * <p>As in {@link GroupCommitIT}, a first complete is parked behind a row lock held by another
 * transaction ({@link RowLock}), so that later callers deterministically merge into the next write.
 */
class CompleteGroupCommitIT {
    private static final Duration WAIT = Duration.ofSeconds(10);
    private static String prefix;

    @BeforeAll
    static void createTable() {
        prefix = TestDatabase.createTable();
    }

    private static <T> T await(CompletableFuture<T> future) {
        try {
            return future.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            throw new AssertionError("complete did not finish", e);
        }
    }

    private static boolean completed(ReactiveWorkQueue<String> queue, String key) {
        return "true".equals(Queues.column(prefix, queue, key, "(completed_at IS NOT NULL)::text"));
    }

    private static String xmin(ReactiveWorkQueue<String> queue, String key) {
        return Queues.column(prefix, queue, key, "xmin::text");
    }

    /**
     * Parks the queue's complete group commit: locks {@code blocker}'s row from another transaction
     * and starts a complete of it that waits for the lock. Until the lock is released, every
     * complete on {@code queue} accumulates for the next write.
     */
    private static Parked park(ReactiveWorkQueue<String> queue) {
        RowLock lock = RowLock.hold(Queues.table(prefix), queue.name(), "blocker");
        CompletableFuture<Long> parkedWrite = queue.complete("blocker").toFuture();
        lock.awaitWaiters(1);
        return new Parked(lock, parkedWrite);
    }

    private record Parked(RowLock lock, CompletableFuture<Long> write) {}

    @Test
    void completesArrivingDuringAWriteShareTheNextStatementAndEachCountsItsOwnItems() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "merged");
        queue.enqueueKeys("blocker", "a", "b", "c", "d").block(WAIT);
        Parked parked = park(queue);

        CompletableFuture<Long> first = queue.complete("a", "b").toFuture();
        CompletableFuture<Long> overlapping = queue.complete("b", "c").toFuture();
        CompletableFuture<Long> unknown = queue.complete("nobody").toFuture();
        CompletableFuture<Long> last = queue.complete("d").toFuture();
        assertFalse(first.isDone() || overlapping.isDone() || unknown.isDone() || last.isDone(),
                "nothing commits while the first write is parked");

        parked.lock().release();
        assertEquals(1L, await(parked.write()));
        // "b" is credited to the first caller that named it: the counts add up to the four items.
        assertEquals(2L, await(first));
        assertEquals(1L, await(overlapping));
        assertEquals(0L, await(unknown));
        assertEquals(1L, await(last));

        String merged = xmin(queue, "a");
        for (String key : List.of("b", "c", "d")) {
            assertEquals(merged, xmin(queue, key), key + " was completed by the same transaction as a");
        }
        assertNotEquals(merged, xmin(queue, "blocker"), "the parked write was its own transaction");
    }

    @Test
    void keysThatNeedQuotingInAnArrayAreCreditedExactly() {
        // When a merged write completes fewer items than keys named, the statement returns the
        // completed keys as a text[]; these keys only survive that round trip if quoting is right.
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "quoting");
        List<String> awkward = List.of("NULL", "null", "a,b", "{x}", "\"quoted\"", "back\\slash", " padded ", "\u00e9t\u00e9 \ud83d\ude00");
        List<String> all = new java.util.ArrayList<>(awkward);
        all.add("blocker");
        queue.enqueueKeys(all).block(WAIT);
        Parked parked = park(queue);

        List<CompletableFuture<Long>> callers = new java.util.ArrayList<>();
        for (String key : awkward) {
            // Each caller also names a key nobody enqueued, so the statement must list what it completed.
            callers.add(queue.complete(key, "missing " + key).toFuture());
        }
        CompletableFuture<Long> again = queue.complete(awkward).toFuture(); // every key named already, later

        parked.lock().release();
        assertEquals(1L, await(parked.write()));
        for (CompletableFuture<Long> caller : callers) {
            assertEquals(1L, await(caller), "each caller completed its own awkward key");
        }
        assertEquals(0L, await(again), "a key named by an earlier caller is credited to that caller");
        assertEquals(0L, queue.stats().block(WAIT).pending());
    }

    @Test
    void mergedCompletesOfWhichNothingCompletesEachCountZeroAndTheMetricCountsNothing() {
        String name = TestDatabase.uniqueName("nothing");
        MeterRegistry registry = new SimpleMeterRegistry();
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(TestDatabase.pool(), String.class)
                .config(WorkQueueConfig.builder(name).tablePrefix(prefix).build())
                .meterRegistry(registry)
                .build();
        queue.enqueueKeys("blocker", "done").block(WAIT);
        assertEquals(1L, queue.complete("done").block(WAIT));
        Parked parked = park(queue);

        // Both ride the write after the parked one, and between them complete no row at all: one
        // key is already completed, the others were never enqueued.
        CompletableFuture<Long> again = queue.complete("done", "never enqueued").toFuture();
        CompletableFuture<Long> unknown = queue.complete("nobody").toFuture();

        parked.lock().release();
        assertEquals(1L, await(parked.write()));
        assertEquals(0L, await(again), "completing a completed key and an unknown one completes nothing");
        assertEquals(0L, await(unknown), "completing an unknown key completes nothing");
        assertEquals(2.0, registry.get(WorkQueueMeters.COMPLETED).tag(WorkQueueMeters.QUEUE_TAG, name).counter().count(),
                "the metric counts \"done\" and \"blocker\", once each");
    }

    @Test
    void theStatementAnswersNoneCompletedWithAnEmptyListNotNull() {
        // NULL is the statement's "every key completed"; it must never stand for "none".
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "statement");
        queue.enqueueKeys("done").block(WAIT);
        assertEquals(1L, queue.complete("done").block(WAIT));
        for (boolean deleteOnComplete : new boolean[] {false, true}) {
            String statement = new Sql(prefix, deleteOnComplete).completeKeys.text();
            Optional<String[]> completedKeys = Mono.usingWhen(TestDatabase.pool().create(),
                            c -> Mono.from(c.createStatement(statement)
                                            .bind(0, queue.name())
                                            .bind(1, new String[] {"done", "never enqueued"})
                                            .bind(2, false)
                                            .execute())
                                    .flatMap(r -> Mono.from(r.map((row, meta) -> Optional.ofNullable(row.get(1, String[].class))))),
                            Connection::close)
                    .block(WAIT);
            assertArrayEquals(new String[0], completedKeys.orElse(null), "deleteOnComplete " + deleteOnComplete);
        }
    }

    @Test
    void manyConcurrentSingleKeyCompletesShareFarFewerTransactionsThanCalls() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "thousand");
        List<String> keys = IntStream.range(0, 1000).mapToObj(i -> "k" + i).toList();
        queue.enqueueKeys(keys).block(WAIT);

        long total = Flux.fromIterable(keys)
                .flatMap(key -> queue.complete(key).subscribeOn(Schedulers.parallel()), keys.size())
                .reduce(0L, Long::sum)
                .block(Duration.ofSeconds(30));

        assertEquals(1000L, total, "every item counted exactly once");
        assertEquals(0L, queue.stats().block(WAIT).pending());
        long transactions = TestDatabase.queryLong("SELECT count(DISTINCT xmin::text) FROM " + Queues.table(prefix)
                + " WHERE queue_name = $1", queue.name());
        assertTrue(transactions < 200, "1,000 completes took " + transactions + " transactions");
    }

    @Test
    void aCallerThatCancelsStopsWaitingButItsItemsAreStillCompleted() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "cancel");
        queue.enqueueKeys("blocker", "leaving", "staying").block(WAIT);
        Parked parked = park(queue);

        queue.complete("leaving").subscribe().dispose();
        CompletableFuture<Long> staying = queue.complete("staying").toFuture();

        parked.lock().release();
        assertEquals(1L, await(staying));
        Poll.until(WAIT, "the cancelled caller's item is completed by the shared write",
                () -> completed(queue, "leaving"));
    }

    @Test
    void closeWaitsForCompletesAlreadySubmittedAndCompletingStillWorksAfterIt() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "close");
        queue.enqueueKeys("blocker", "held", "later").block(WAIT);
        Parked parked = park(queue);
        CompletableFuture<Long> held = queue.complete("held").toFuture();

        CompletableFuture<Void> closed = queue.close().toFuture();
        assertFalse(closed.isDone(), "close waits for the parked complete and the one behind it");

        parked.lock().release();
        await(closed);
        assertTrue(held.isDone(), "close completed only after the complete submitted before it");
        assertEquals(1L, await(held));
        assertEquals(1L, queue.complete("later").block(WAIT), "a worker may still complete what it holds");
    }
}
