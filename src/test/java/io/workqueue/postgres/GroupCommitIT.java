package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.r2dbc.spi.Connection;
import io.workqueue.Entry;
import io.workqueue.InvalidKeyException;
import io.workqueue.Item;
import io.workqueue.KeyCodec;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkQueueException;
import io.workqueue.WriteTimeoutException;
import io.workqueue.internal.SqlStates;
import io.workqueue.testing.Faults;
import io.workqueue.testing.Poll;
import io.workqueue.testing.Queues;
import io.workqueue.testing.Race;
import io.workqueue.testing.RowLock;
import io.workqueue.testing.TableLock;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import org.junit.jupiter.api.extension.ExtendWith;
import io.workqueue.testing.ExpectedLogs;

/**
 * The group-committed {@code enqueue}: merged writes, one in flight per instance, each caller told
 * only once its rows committed, cancellation that does not reach the shared write, failures that
 * reach exactly the callers of the failed batch.
 *
 * <p>Several tests park the first write behind a row lock held by another transaction
 * ({@link RowLock}), so that later callers deterministically accumulate into the next write.
 */
@ExtendWith(ExpectedLogs.class)
class GroupCommitIT {
    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final Duration LEASE = Duration.ofMinutes(5);
    private static String prefix;

    @BeforeAll
    static void createTable() {
        prefix = TestDatabase.createTable();
    }

    /** How many transactions wrote the current versions of these rows (their distinct xmin). */
    private static long writingTransactions(String tablePrefix, ReactiveWorkQueue<String> queue, List<String> keys) {
        return TestDatabase.queryLong("SELECT count(DISTINCT xmin::text) FROM " + Queues.table(tablePrefix)
                + " WHERE queue_name = $1 AND item_key = ANY($2)", queue.name(), keys.toArray(String[]::new));
    }

    private static String xmin(String tablePrefix, ReactiveWorkQueue<String> queue, String key) {
        return Queues.column(tablePrefix, queue, key, "xmin::text");
    }

    private static void await(CompletableFuture<?> future) {
        try {
            future.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            throw new AssertionError("enqueue did not complete", e);
        }
    }

    private static Throwable failureOf(CompletableFuture<?> future) {
        try {
            future.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            return e.getCause();
        } catch (Exception e) {
            throw new AssertionError("enqueue neither failed nor completed in time", e);
        }
        throw new AssertionError("expected the enqueue to fail, but it completed");
    }

    /**
     * Parks the queue's group commit: enqueues {@code blocker}, locks its row from another
     * transaction, and starts a write of it that waits for the lock. Until the lock is released,
     * every enqueue on {@code queue} accumulates for the next write.
     */
    private static Parked park(String tablePrefix, ReactiveWorkQueue<String> queue) {
        queue.enqueueKeys("blocker").block(WAIT);
        RowLock lock = RowLock.hold(Queues.table(tablePrefix), queue.name(), "blocker");
        CompletableFuture<Void> parkedWrite = queue.enqueue(Entry.of("blocker").withPriority(1)).toFuture();
        lock.awaitWaiters(1);
        return new Parked(lock, parkedWrite);
    }

    private record Parked(RowLock lock, CompletableFuture<Void> write) {}

    @Test
    void overlappingConcurrentEnqueuesLandOnceWithTheHighestPriority() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "overlap");
        int callers = 24;
        int keys = 30;
        Map<String, Integer> expected = new HashMap<>();
        List<List<Entry<String>>> batches = new ArrayList<>();
        for (int caller = 0; caller < callers; caller++) {
            List<Entry<String>> entries = new ArrayList<>();
            for (int k = 0; k < keys; k++) {
                if ((caller + k) % 3 == 0) {
                    continue;
                }
                String key = "k" + k;
                int priority = (caller * 7 + k * 13) % 50 - 10;
                entries.add(Entry.of(key).withPriority(priority));
                expected.merge(key, priority, Math::max);
            }
            batches.add(entries);
        }

        Race.run(callers, i -> queue.enqueue(batches.get(i)).block(WAIT));

        assertEquals(keys, Queues.rows(prefix, queue), "each key landed exactly once");
        Map<String, Integer> stored = new HashMap<>();
        for (Item<String> item : queue.claim(0, LEASE).block(WAIT)) {
            stored.put(item.key(), item.priority());
        }
        assertEquals(expected, stored, "every key has the highest priority any caller gave it");
    }

    @Test
    void manyConcurrentEnqueuesShareFarFewerTransactionsThanCalls() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "thousand");
        List<String> keys = IntStream.range(0, 1000).mapToObj(i -> "k" + i).toList();

        Flux.fromIterable(keys)
                .flatMap(key -> queue.enqueueKeys(key).subscribeOn(Schedulers.parallel()), keys.size())
                .then()
                .block(Duration.ofSeconds(30));

        assertEquals(1000L, Queues.rows(prefix, queue));
        // Each row's xmin names the transaction that wrote it: exact, and blind to whatever else
        // the server is doing (unlike pg_stat_database.xact_commit).
        long transactions = writingTransactions(prefix, queue, keys);
        assertTrue(transactions < 200, "1,000 enqueues took " + transactions + " transactions");
    }

    @Test
    void everythingArrivingDuringAWriteRidesTheNextWriteAsOneUpsert() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "next-write");
        Parked parked = park(prefix, queue);

        List<CompletableFuture<Void>> callers = new ArrayList<>();
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            keys.add("later" + i);
            callers.add(queue.enqueueKeys("later" + i).toFuture());
        }
        assertTrue(callers.stream().noneMatch(CompletableFuture::isDone), "nothing commits while the write is parked");
        assertFalse(parked.write().isDone());
        assertEquals(0L, TestDatabase.queryLong("SELECT count(*) FROM " + Queues.table(prefix)
                + " WHERE queue_name = $1 AND item_key LIKE 'later%'", queue.name()));

        parked.lock().release();
        await(parked.write());
        callers.forEach(GroupCommitIT::await);

        assertEquals(1L, writingTransactions(prefix, queue, keys), "ten callers, one upsert");
        assertNotEquals(xmin(prefix, queue, "blocker"), xmin(prefix, queue, "later0"));
    }

    @Test
    void duplicateKeysInOneFlushMergeWithTheSameRuleAsTheUpsert() {
        List<List<Entry<String>>> calls = List.of(
                List.of(Entry.of("a").withPriority(1).withDelay(Duration.ofHours(1)), Entry.of("b")),
                List.of(Entry.of("a").withPriority(5).withDelay(Duration.ofHours(2))),
                List.of(Entry.of("a").withPriority(3).withDelay(Duration.ofMinutes(30)),
                        Entry.of("b").withPriority(-1).withDelay(Duration.ofMinutes(10))));

        // All three calls in one flush: merged in memory (an unmerged upsert fails with 21000).
        ReactiveWorkQueue<String> merged = Queues.fresh(prefix, "merged");
        Parked parked = park(prefix, merged);
        List<CompletableFuture<Void>> callers = calls.stream().map(c -> merged.enqueue(c).toFuture()).toList();
        parked.lock().release();
        callers.forEach(GroupCommitIT::await);
        assertEquals(1L, writingTransactions(prefix, merged, List.of("a", "b")));

        // The same calls one flush each: merged by ON CONFLICT.
        ReactiveWorkQueue<String> sequential = Queues.fresh(prefix, "sequential");
        calls.forEach(c -> sequential.enqueue(c).block(WAIT));

        for (ReactiveWorkQueue<String> queue : List.of(merged, sequential)) {
            assertEquals("5", Queues.column(prefix, queue, "a", "priority"), queue.name());
            assertEquals("0", Queues.column(prefix, queue, "b", "priority"), queue.name());
            assertEquals("true", Queues.column(prefix, queue, "b", "available_at = enqueued_at"), queue.name());
            // The shortest delay wins (measured from each write; the sequential writes were moments apart).
            assertEquals("true", Queues.column(prefix, queue, "a",
                    "available_at - enqueued_at BETWEEN INTERVAL '30 minutes' AND INTERVAL '30 minutes 5 seconds'"),
                    queue.name());
        }
        assertEquals("true", Queues.column(prefix, merged, "a", "available_at - enqueued_at = INTERVAL '30 minutes'"));
    }

    @Test
    void enqueueThenClaimSeesTheKey() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "read-your-write");
        for (int i = 0; i < 20; i++) {
            String key = "k" + i;
            List<Item<String>> claimed = queue.enqueueKeys(key).then(queue.claim(10, LEASE)).block(WAIT);
            assertEquals(List.of(key), claimed.stream().map(Item::key).toList());
        }
    }

    @Test
    void eachCallerCompletesOnlyOnceItsRowsAreVisibleToOtherConnections() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "visible");
        String sql = "SELECT count(*) FROM " + Queues.table(prefix) + " WHERE queue_name = $1 AND item_key = $2";

        List<Long> seen = Flux.range(0, 100)
                .flatMap(i -> queue.enqueueKeys("k" + i)
                        .then(Mono.usingWhen(TestDatabase.pool().create(),
                                (Connection c) -> Mono.from(c.createStatement(sql).bind(0, queue.name()).bind(1, "k" + i).execute())
                                        .flatMap(r -> Mono.from(r.map((row, meta) -> row.get(0, Long.class)))),
                                Connection::close)), 100)
                .collectList()
                .block(Duration.ofSeconds(30));

        assertEquals(100, seen.size());
        assertTrue(seen.stream().allMatch(n -> n == 1L), "a caller was told before its row committed: " + seen);
    }

    @Test
    void aCallerThatCancelsAtOnceDoesNotCancelTheWrite() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "cancel-now");

        queue.enqueueKeys("cancelled").subscribe().dispose();

        Poll.until(WAIT, "the abandoned enqueue to land", () -> Queues.exists(prefix, queue, "cancelled"));
    }

    @Test
    void callersThatCancelMidWriteDoNotCancelTheSharedWrite() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "cancel-mid");
        queue.enqueueKeys("blocker").block(WAIT);
        RowLock lock = RowLock.hold(Queues.table(prefix), queue.name(), "blocker");
        var parkedCaller = queue.enqueue(Entry.of("blocker").withPriority(7)).subscribe();
        lock.awaitWaiters(1);
        var laterCaller = queue.enqueueKeys("later").subscribe();
        CompletableFuture<Void> stayingCaller = queue.enqueueKeys("staying").toFuture();

        parkedCaller.dispose();
        laterCaller.dispose();
        lock.release();

        await(stayingCaller);
        Poll.until(WAIT, "the parked write to commit",
                () -> "7".equals(Queues.column(prefix, queue, "blocker", "priority")));
        assertTrue(Queues.exists(prefix, queue, "later"), "rode the same write as a caller that stayed");
    }

    @Test
    void aFailedWriteFailsEveryCallerInItsBatchAndOnlyThem() {
        String isolated = TestDatabase.createTable();
        ReactiveWorkQueue<String> queue = Queues.fresh(isolated, "poisoned");
        Faults.failKey(isolated, "INSERT", "poison", "P0001");
        Parked parked = park(isolated, queue);

        CompletableFuture<Void> fine = queue.enqueueKeys("fine1").toFuture();
        CompletableFuture<Void> poisoned = queue.enqueueKeys("poison").toFuture();
        CompletableFuture<Void> alsoFine = queue.enqueueKeys("fine2", "fine3").toFuture();
        parked.lock().release();

        await(parked.write());
        for (CompletableFuture<Void> caller : List.of(fine, poisoned, alsoFine)) {
            assertEquals("P0001", SqlStates.sqlState(failureOf(caller)), "every caller of the batch sees the database error");
        }
        assertEquals(List.of("blocker"), TestDatabase.queryStrings("SELECT item_key FROM " + Queues.table(isolated)
                + " WHERE queue_name = $1", queue.name()), "the failed batch wrote nothing");

        queue.enqueueKeys("fine1").block(WAIT);
        assertTrue(Queues.exists(isolated, queue, "fine1"), "the next batch is unaffected");
    }

    @Test
    void invalidKeysFailOnlyTheirOwnCallerAndNeverJoinABatch() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "invalid-batch");
        Parked parked = park(prefix, queue);

        CompletableFuture<Void> valid = queue.enqueueKeys("ok1").toFuture();
        CompletableFuture<Void> partlyInvalid = queue.enqueueKeys(Arrays.asList("ok2", null)).toFuture();
        CompletableFuture<Void> invalid = queue.enqueueKeys("bad\nkey").toFuture();
        CompletableFuture<Void> alsoValid = queue.enqueueKeys("ok3").toFuture();
        // Refused before joining: they fail while the batch they would have joined is still parked.
        assertTrue(partlyInvalid.isCompletedExceptionally());
        assertTrue(invalid.isCompletedExceptionally());
        parked.lock().release();

        await(valid);
        await(alsoValid);
        assertEquals(InvalidKeyException.Reason.NULL, ((InvalidKeyException) failureOf(partlyInvalid)).reason());
        assertEquals(InvalidKeyException.Reason.CONTROL_CHARACTER, ((InvalidKeyException) failureOf(invalid)).reason());
        assertTrue(Queues.exists(prefix, queue, "ok1"));
        assertTrue(Queues.exists(prefix, queue, "ok3"));
        assertFalse(Queues.exists(prefix, queue, "ok2"), "nothing of a call with an invalid key is written");
        assertEquals(1L, writingTransactions(prefix, queue, List.of("ok1", "ok3")));
    }

    @Test
    void aKeyItsCodecCannotEncodeFailsOnlyItsOwnCallerAsAnInvalidKey() {
        IllegalStateException broken = new IllegalStateException("no stored form for this key");
        KeyCodec<String> failingOnBroken = new KeyCodec<>() {
            @Override
            public String encode(String key) {
                if (key.startsWith("broken")) {
                    throw broken;
                }
                return key;
            }

            @Override
            public String decode(String encoded) {
                return encoded;
            }
        };
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(TestDatabase.pool(), String.class)
                .config(WorkQueueConfig.builder(TestDatabase.uniqueName("unencodable")).tablePrefix(prefix).build())
                .keyCodec(failingOnBroken)
                .build();
        Parked parked = park(prefix, queue);

        CompletableFuture<Void> valid = queue.enqueueKeys("ok1").toFuture();
        CompletableFuture<Void> unencodable = queue.enqueueKeys("ok2", "broken").toFuture();
        CompletableFuture<Void> alsoValid = queue.enqueueKeys("ok3").toFuture();
        assertTrue(unencodable.isCompletedExceptionally(), "refused before joining the parked batch");
        parked.lock().release();

        await(valid);
        await(alsoValid);
        InvalidKeyException refused = assertInstanceOf(InvalidKeyException.class, failureOf(unencodable));
        assertEquals(InvalidKeyException.Reason.ENCODING_FAILED, refused.reason());
        assertSame(broken, refused.getCause());
        assertTrue(Queues.exists(prefix, queue, "ok1"));
        assertTrue(Queues.exists(prefix, queue, "ok3"));
        assertFalse(Queues.exists(prefix, queue, "ok2"), "nothing of a call with an unencodable key is written");
        for (Mono<Long> write : List.of(queue.complete("ok1", "broken"), queue.remove("broken"))) {
            InvalidKeyException writer = assertInstanceOf(InvalidKeyException.class, failureOf(write.toFuture()));
            assertEquals(InvalidKeyException.Reason.ENCODING_FAILED, writer.reason());
        }
    }

    @Test
    void keysAreVettedAfterEncodingWithTheRightReason() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "vetting");
        Map<String, InvalidKeyException.Reason> refused = new java.util.LinkedHashMap<>();
        refused.put("", InvalidKeyException.Reason.EMPTY);
        refused.put("a".repeat(513), InvalidKeyException.Reason.TOO_LONG);
        refused.put("\u20ac".repeat(171), InvalidKeyException.Reason.TOO_LONG); // 171 characters, 513 UTF-8 bytes
        refused.put("nul\0", InvalidKeyException.Reason.CONTROL_CHARACTER);
        refused.put("cr\r", InvalidKeyException.Reason.CONTROL_CHARACTER);
        refused.put("lf\n", InvalidKeyException.Reason.CONTROL_CHARACTER);

        for (Map.Entry<String, InvalidKeyException.Reason> e : refused.entrySet()) {
            Throwable error = failureOf(queue.enqueueKeys(e.getKey()).toFuture());
            assertEquals(e.getValue(), assertInstanceOf(InvalidKeyException.class, error).reason(),
                    "key of length " + e.getKey().length());
        }
        Throwable nullKey = failureOf(queue.enqueue(Entry.<String>of(null)).toFuture());
        assertEquals(InvalidKeyException.Reason.NULL, assertInstanceOf(InvalidKeyException.class, nullKey).reason());
        assertEquals(0L, Queues.rows(prefix, queue), "refused keys are never truncated and written");

        String ascii512 = "a".repeat(512);
        String euro512 = "\u20ac".repeat(170) + "ab"; // 512 UTF-8 bytes
        queue.enqueueKeys(ascii512, euro512).block(WAIT);
        assertEquals(java.util.Set.of(ascii512, euro512),
                new java.util.HashSet<>(queue.claim(0, LEASE).block(WAIT).stream().map(Item::key).toList()),
                "512 bytes is allowed and round-trips unchanged");
    }

    @Test
    void theKeyWritersVetKeysToo() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "writer-vetting");
        List<Mono<Long>> writes = List.of(
                queue.complete("ok", "bad\r"),
                queue.release(Duration.ZERO, null, Arrays.asList("ok", null)),
                queue.remove("a".repeat(513)));
        List<InvalidKeyException.Reason> reasons = List.of(InvalidKeyException.Reason.CONTROL_CHARACTER,
                InvalidKeyException.Reason.NULL, InvalidKeyException.Reason.TOO_LONG);
        for (int i = 0; i < writes.size(); i++) {
            Throwable error = failureOf(writes.get(i).toFuture());
            assertEquals(reasons.get(i), assertInstanceOf(InvalidKeyException.class, error).reason());
        }
    }

    @Test
    void aWriteThatPostgresAsksToRetryIsRetriedForEveryCaller() {
        String isolated = TestDatabase.createTable();
        ReactiveWorkQueue<String> queue = Queues.fresh(isolated, "retried", c -> c.writeAttempts(3));
        Faults.failRows(isolated, "INSERT", 2, SqlStates.SERIALIZATION_FAILURE);

        queue.enqueueKeys("a", "b").block(WAIT);

        assertEquals(2L, Queues.rows(isolated, queue));
        assertEquals(4L, Faults.rowsSeen(isolated, "INSERT"), "two failed runs of one row each, then a run of two");
    }

    @Test
    void aWriteThatOutlivesTheEnqueueTimeoutFailsItsCallersAndLaterEnqueuesStillWork() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "timeout", c -> c.writeTimeout(Duration.ofMillis(300)));
        queue.enqueueKeys("blocker").block(WAIT);
        try (RowLock lock = RowLock.hold(Queues.table(prefix), queue.name(), "blocker")) {
            Throwable error = failureOf(queue.enqueue(Entry.of("blocker").withPriority(1), Entry.of("x")).toFuture());
            assertEquals(Duration.ofMillis(300), assertInstanceOf(WriteTimeoutException.class, error).timeout());
            lock.release();
        }
        queue.enqueueKeys("after").block(WAIT);
        assertTrue(Queues.exists(prefix, queue, "after"));
    }

    @Test
    void aCallerWhoseErrorHandlerThrowsDuringAStallCannotWedgeTheQueue() {
        String isolated = TestDatabase.createTable();
        ReactiveWorkQueue<String> queue = Queues.fresh(isolated, "rethrowing", c -> c.writeTimeout(Duration.ofMillis(500)));
        AtomicReference<Throwable> heardByThrower = new AtomicReference<>();
        CompletableFuture<Void> sameBatch;
        try (TableLock lock = TableLock.hold(Queues.table(isolated))) {
            // A first write waits on the lock, so the next two callers share the write after it.
            CompletableFuture<Void> parked = queue.enqueueKeys("parked").toFuture();
            lock.awaitWaiters(1);
            queue.enqueueKeys("thrower").subscribe(ignored -> {}, e -> {
                heardByThrower.set(e);
                throw new IllegalStateException("the caller's own handler", e);
            });
            sameBatch = queue.enqueueKeys("same-batch").toFuture();

            assertInstanceOf(WorkQueueException.class, failureOf(parked));
            assertInstanceOf(WorkQueueException.class, failureOf(sameBatch),
                    "told although another caller of its write threw when told");
            assertInstanceOf(WorkQueueException.class, heardByThrower.get());
        }

        CompletableFuture<Void> afterRecovery = queue.enqueueKeys("after").toFuture();
        await(afterRecovery);
        assertTrue(Queues.exists(isolated, queue, "after"), "the next write ran once the table was free");
        await(queue.close().toFuture());
    }
}
