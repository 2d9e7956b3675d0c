package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.r2dbc.spi.Connection;
import io.r2dbc.spi.R2dbcException;
import io.workqueue.Entry;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.internal.SqlStates;
import io.workqueue.testing.Queues;
import io.workqueue.testing.RowLock;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.UnaryOperator;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * One total lock order: every writer that can wait for a row lock takes its locks in key order,
 * whatever order the caller names the keys in, so overlapping batches queue instead of deadlocking.
 * Controls show the same shapes without the order do deadlock, so these tests can fail.
 */
class LockOrderIT {
    private static final Duration WAIT = Duration.ofSeconds(10);
    private static String prefix;
    private static String table;

    @BeforeAll
    static void createTable() {
        prefix = TestDatabase.createTable();
        table = Queues.table(prefix);
    }

    // ---------------------------------------------------------------- the stress

    /** Completing by marking rows and by deleting them reach the rows through the same lock order. */
    @ParameterizedTest(name = "deleteOnComplete = {0}")
    @ValueSource(booleans = {false, true})
    void overlappingWritersInOppositeOrdersNeverDeadlock(boolean deleteOnComplete) {
        String name = TestDatabase.uniqueName("stress");
        // No retries: a deadlock would surface instead of being absorbed.
        UnaryOperator<WorkQueueConfig.Builder> config = c -> c.writeAttempts(1).deleteOnComplete(deleteOnComplete);
        ReactiveWorkQueue<String> one = Queues.over(TestDatabase.pool(), prefix, name, config);
        // A second instance of the same queue has its own group commit, so two upserts overlap.
        ReactiveWorkQueue<String> two = Queues.over(TestDatabase.pool(), prefix, name, config);
        List<String> keys = IntStream.range(0, 40).mapToObj(i -> String.format("k%02d", i)).toList();
        List<String> ascending = keys;
        List<String> descending = new ArrayList<>(keys);
        Collections.reverse(descending);
        Random random = new Random(42);
        ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();
        Map<String, Integer> writes = new ConcurrentHashMap<>();

        for (int round = 0; round < 40; round++) {
            List<String> shuffled = new ArrayList<>(keys);
            Collections.shuffle(shuffled, random);
            List<Entry<String>> upsertUp = ascending.stream().map(k -> Entry.of(k).withPriority(random.nextInt(10))).toList();
            List<Entry<String>> upsertDown = descending.stream().map(k -> Entry.of(k).withPriority(random.nextInt(10))).toList();
            List<Entry<String>> upsertShuffled = shuffled.stream().map(Entry::of).toList();
            List<Mono<?>> ops = List.of(
                    one.enqueue(upsertUp),
                    two.enqueue(upsertDown),
                    one.complete(ascending.subList(0, 30)),
                    two.complete(descending.subList(0, 30)),
                    one.release(Duration.ZERO, new RuntimeException("r"), descending),
                    two.release(Duration.ZERO, null, shuffled.subList(0, 25)),
                    one.remove(shuffled.subList(10, 20)),
                    two.remove(descending.subList(5, 15)),
                    one.claim(7, Duration.ofMinutes(1)),
                    two.enqueue(upsertShuffled));
            Flux.fromIterable(ops)
                    .flatMap(op -> op.subscribeOn(Schedulers.parallel())
                            .doOnSuccess(v -> writes.merge("ok", 1, Integer::sum))
                            .onErrorResume(e -> {
                                errors.add(e);
                                return Mono.empty();
                            }), ops.size())
                    .then()
                    .block(Duration.ofSeconds(30));
        }

        long deadlocks = errors.stream().filter(e -> SqlStates.DEADLOCK_DETECTED.equals(SqlStates.sqlState(e))).count();
        assertEquals(0, deadlocks, "deadlocks among " + writes + " writes");
        assertEquals(List.of(), List.copyOf(errors), "no write failed at all");
        assertEquals(400, writes.get("ok"));
    }

    // ---------------------------------------------------------------- the control

    @Test
    void controlTheSameUpdatesInOppositeOrdersWithoutTheLockOrderDeadlock() throws Exception {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "control");
        queue.enqueueKeys("a", "b").block(WAIT);
        String update = "UPDATE " + table + " SET priority = priority + 1 WHERE queue_name = $1 AND item_key = $2";
        Connection t1 = Mono.from(TestDatabase.plain().create()).block(WAIT);
        Connection t2 = Mono.from(TestDatabase.plain().create()).block(WAIT);
        try {
            int t1Pid = pid(t1);
            Mono.from(t1.beginTransaction()).block(WAIT);
            Mono.from(t2.beginTransaction()).block(WAIT);
            execute(t1, update, queue.name(), "a").block(WAIT); // T1 locks a
            execute(t2, update, queue.name(), "b").block(WAIT); // T2 locks b
            CompletableFuture<Long> t1b = execute(t1, update, queue.name(), "b").toFuture(); // T1 waits for b
            awaitBlocked(t1Pid);
            CompletableFuture<Long> t2a = execute(t2, update, queue.name(), "a").toFuture(); // T2 waits for a: a cycle

            List<String> outcomes = new ArrayList<>();
            for (CompletableFuture<Long> statement : List.of(t1b, t2a)) {
                try {
                    statement.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
                    outcomes.add("ok");
                } catch (java.util.concurrent.ExecutionException e) {
                    outcomes.add(SqlStates.sqlState(e.getCause()));
                }
            }
            Collections.sort(outcomes);
            assertEquals(List.of(SqlStates.DEADLOCK_DETECTED, "ok"), outcomes,
                    "PostgreSQL breaks the cycle by failing one of the two transactions");
        } finally {
            for (Connection c : List.of(t1, t2)) {
                Mono.from(c.rollbackTransaction()).onErrorResume(e -> Mono.empty()).then(Mono.from(c.close())).block(WAIT);
            }
        }
    }

    // ---------------------------------------------------------------- each writer, deterministically

    /**
     * Another transaction holds "a"; the writer is handed ("b", "a"). A writer that locks in key
     * order is now waiting for "a" and has not touched "b", so "b" can be locked with NOWAIT. A
     * writer that followed the caller's order would hold "b": NOWAIT would fail with 55P03.
     */
    private void assertTakesLocksInKeyOrder(String hint, Function<ReactiveWorkQueue<String>, Mono<?>> writer) {
        assertTakesLocksInKeyOrder(hint, c -> c, writer);
    }

    private void assertTakesLocksInKeyOrder(String hint, UnaryOperator<WorkQueueConfig.Builder> config,
            Function<ReactiveWorkQueue<String>, Mono<?>> writer) {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, hint, config);
        queue.enqueueKeys("a", "b").block(WAIT);
        CompletableFuture<?> write;
        try (RowLock lock = RowLock.hold(table, queue.name(), "a")) {
            write = writer.apply(queue).toFuture();
            lock.awaitWaiters(1);
            assertDoesNotThrow(() -> lockNoWait(queue, "b"), "the writer took b before a");
            lock.release();
        }
        assertDoesNotThrow(() -> write.get(WAIT.toMillis(), TimeUnit.MILLISECONDS));
    }

    private static void lockNoWait(ReactiveWorkQueue<String> queue, String key) {
        TestDatabase.queryStrings("SELECT item_key FROM " + table
                + " WHERE queue_name = $1 AND item_key = $2 FOR UPDATE NOWAIT", queue.name(), key);
    }

    @Test
    void completeLocksInKeyOrderWhateverTheArgumentOrder() {
        assertTakesLocksInKeyOrder("complete", q -> q.complete("b", "a"));
    }

    @Test
    void completeAndClaimLocksInKeyOrderWhateverTheArgumentOrder() {
        assertTakesLocksInKeyOrder("cac", q -> q.completeAndClaim(List.of("b", "a"), 10, Duration.ofMinutes(1)));
    }

    @Test
    void completeLocksInKeyOrderWhenItDeletes() {
        assertTakesLocksInKeyOrder("complete-deleting", c -> c.deleteOnComplete(true), q -> q.complete("b", "a"));
    }

    @Test
    void completeAndClaimLocksInKeyOrderWhenItDeletes() {
        assertTakesLocksInKeyOrder("cac-deleting", c -> c.deleteOnComplete(true),
                q -> q.completeAndClaim(List.of("b", "a"), 10, Duration.ofMinutes(1)));
    }

    @Test
    void releaseLocksInKeyOrderWhateverTheArgumentOrder() {
        assertTakesLocksInKeyOrder("release", q -> q.release(Duration.ZERO, null, "b", "a"));
    }

    @Test
    void removeLocksInKeyOrderWhateverTheArgumentOrder() {
        assertTakesLocksInKeyOrder("remove", q -> q.remove("b", "a"));
    }

    @Test
    void enqueueLocksInKeyOrderWhateverTheArgumentOrder() {
        assertTakesLocksInKeyOrder("enqueue", q -> q.enqueue(Entry.of("b").withPriority(1), Entry.of("a").withPriority(1)));
    }

    @Test
    void transactionalEnqueueLocksInKeyOrderWhateverTheArgumentOrder() {
        assertTakesLocksInKeyOrder("tx-enqueue", q -> Mono.usingWhen(TestDatabase.pool().create(),
                c -> q.enqueue(c, List.of(Entry.of("b").withPriority(1), Entry.of("a").withPriority(1))),
                Connection::close));
    }

    @Test
    void keyOrderIsBytewiseSoClientAndServerAgree() {
        // Upper case sorts before lower case bytewise, but not in most linguistic collations.
        assertTakesLocksInKeyOrderFor("bytewise", "B", "a");
    }

    private void assertTakesLocksInKeyOrderFor(String hint, String first, String second) {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, hint);
        queue.enqueueKeys(first, second).block(WAIT);
        try (RowLock lock = RowLock.hold(table, queue.name(), first)) {
            CompletableFuture<?> write = queue.enqueue(Entry.of(second).withPriority(1), Entry.of(first).withPriority(1)).toFuture();
            lock.awaitWaiters(1);
            assertDoesNotThrow(() -> lockNoWait(queue, second), "the upsert took " + second + " before " + first);
            lock.release();
            assertDoesNotThrow(() -> write.get(WAIT.toMillis(), TimeUnit.MILLISECONDS));
        }
    }

    @Test
    void controlTheProbeCatchesAWriterThatLocksInArgumentOrder() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "probe-control");
        queue.enqueueKeys("a", "b").block(WAIT);
        String update = "UPDATE " + table + " SET priority = priority + 1 WHERE queue_name = $1 AND item_key = $2";
        Connection unordered = Mono.from(TestDatabase.plain().create()).block(WAIT);
        try (RowLock lock = RowLock.hold(table, queue.name(), "a")) {
            Mono.from(unordered.beginTransaction()).block(WAIT);
            execute(unordered, update, queue.name(), "b").block(WAIT);
            CompletableFuture<Long> second = execute(unordered, update, queue.name(), "a").toFuture();
            lock.awaitWaiters(1);

            R2dbcException refused = assertThrows(R2dbcException.class, () -> lockNoWait(queue, "b"));
            assertEquals("55P03", refused.getSqlState(), "lock_not_available");
            lock.release();
            assertNotNull(assertDoesNotThrow(() -> second.get(WAIT.toMillis(), TimeUnit.MILLISECONDS)));
        } finally {
            Mono.from(unordered.rollbackTransaction()).onErrorResume(e -> Mono.empty())
                    .then(Mono.from(unordered.close())).block(WAIT);
        }
    }

    // ---------------------------------------------------------------- plumbing

    private static Mono<Long> execute(Connection connection, String sql, String queue, String key) {
        return Flux.from(connection.createStatement(sql).bind(0, queue).bind(1, key).execute())
                .concatMap(r -> r.getRowsUpdated())
                .reduce(0L, Long::sum);
    }

    private static int pid(Connection connection) {
        return Mono.from(connection.createStatement("SELECT pg_backend_pid()").execute())
                .flatMap(r -> Mono.from(r.map((row, meta) -> row.get(0, Integer.class))))
                .block(WAIT);
    }

    private static void awaitBlocked(int pid) {
        io.workqueue.testing.Poll.until(WAIT, "pid " + pid + " to wait for a lock", () -> TestDatabase.queryLong(
                "SELECT cardinality(pg_blocking_pids($1))", pid) > 0);
    }
}
