package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.r2dbc.spi.Connection;
import io.workqueue.Entry;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.testing.Queues;
import io.workqueue.testing.RowLock;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/** {@code enqueue(connection, entries)}: the rows live and die with the caller's transaction. */
class TransactionalEnqueueIT {
    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final Duration LEASE = Duration.ofMinutes(5);
    private static String prefix;

    @BeforeAll
    static void createTable() {
        prefix = TestDatabase.createTable();
    }

    /** Runs {@code work} on a fresh connection with a transaction open; the work ends it. */
    private static void inTransaction(Consumer<Connection> work) {
        Connection connection = Mono.from(TestDatabase.plain().create()).block(WAIT);
        try {
            Mono.from(connection.beginTransaction()).block(WAIT);
            work.accept(connection);
        } finally {
            Mono.from(connection.close()).block(WAIT);
        }
    }

    @Test
    void aRolledBackTransactionLeavesNoRows() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "rollback");
        inTransaction(connection -> {
            queue.enqueue(connection, List.of(Entry.of("a"), Entry.of("b"))).block(WAIT);
            assertEquals(0L, Queues.rows(prefix, queue), "invisible to others before commit");
            Mono.from(connection.rollbackTransaction()).block(WAIT);
        });

        assertEquals(0L, Queues.rows(prefix, queue));
        assertEquals(List.of(), queue.claim(10, LEASE).block(WAIT));
    }

    @Test
    void aCommittedTransactionMakesTheRowsVisible() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "commit");
        inTransaction(connection -> {
            queue.enqueue(connection, List.of(Entry.of("a").withPriority(2), Entry.of("b"))).block(WAIT);
            assertEquals(0L, Queues.rows(prefix, queue), "invisible to others before commit");
            Mono.from(connection.commitTransaction()).block(WAIT);
        });

        assertEquals(List.of(Item.of("a", 2, 1, false), Item.of("b", 0, 1, false)),
                queue.claim(10, LEASE).block(WAIT));
    }

    @Test
    void theConnectionIsLeftOpenWithItsTransactionUncommitted() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "left-open");
        inTransaction(connection -> {
            queue.enqueue(connection, List.of(Entry.of("a"))).block(WAIT);
            long inside = Flux.from(connection.createStatement("SELECT count(*) FROM " + Queues.table(prefix)
                                    + " WHERE queue_name = $1")
                            .bind(0, queue.name())
                            .execute())
                    .concatMap(r -> r.map((row, meta) -> row.get(0, Long.class)))
                    .blockFirst(WAIT);
            assertEquals(1L, inside, "the caller's own transaction sees the row");
            assertFalse(connection.isAutoCommit(), "still inside the caller's transaction");
            Mono.from(connection.rollbackTransaction()).block(WAIT);
        });
        assertEquals(0L, Queues.rows(prefix, queue), "nothing was committed on the caller's behalf");
    }

    @Test
    void duplicateKeysInOneCallMergeLikeTheGroupCommit() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "merge");
        inTransaction(connection -> {
            queue.enqueue(connection, List.of(
                    Entry.of("a").withPriority(1).withDelay(Duration.ofHours(1)),
                    Entry.of("a").withPriority(4).withDelay(Duration.ofHours(2)),
                    Entry.of("a").withPriority(2).withDelay(Duration.ofMinutes(20)))).block(WAIT);
            Mono.from(connection.commitTransaction()).block(WAIT);
        });

        assertEquals("4", Queues.column(prefix, queue, "a", "priority"));
        assertEquals("true", Queues.column(prefix, queue, "a", "available_at - enqueued_at = INTERVAL '20 minutes'"));
    }

    @Test
    void itAppliesTheReEnqueueRule() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "rule");
        queue.enqueue(Entry.of("outstanding").withPriority(5), Entry.of("done").withPriority(5)).block(WAIT);
        queue.complete("done").block(WAIT);
        inTransaction(connection -> {
            queue.enqueue(connection, List.of(Entry.of("outstanding").withPriority(1), Entry.of("done").withPriority(1)))
                    .block(WAIT);
            Mono.from(connection.commitTransaction()).block(WAIT);
        });

        assertEquals("5", Queues.column(prefix, queue, "outstanding", "priority"), "priority only rises");
        assertEquals("1", Queues.column(prefix, queue, "done", "priority"), "a completed item restarts outright");
        assertEquals("true", Queues.column(prefix, queue, "done", "completed_at IS NULL"));
    }

    @Test
    void itBypassesTheGroupCommitAndWorksAfterClose() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "bypass");
        queue.enqueueKeys("blocker").block(WAIT);
        try (RowLock lock = RowLock.hold(Queues.table(prefix), queue.name(), "blocker")) {
            CompletableFuture<Void> parked = queue.enqueue(Entry.of("blocker").withPriority(1)).toFuture();
            lock.awaitWaiters(1);
            inTransaction(connection -> {
                queue.enqueue(connection, List.of(Entry.of("direct"))).block(WAIT);
                Mono.from(connection.commitTransaction()).block(WAIT);
            });
            assertTrue(Queues.exists(prefix, queue, "direct"), "committed while the group commit was parked");
            assertFalse(parked.isDone());
            lock.release();
            parked.join();
        }

        queue.close().block(WAIT);
        inTransaction(connection -> {
            queue.enqueue(connection, List.of(Entry.of("after-close"))).block(WAIT);
            Mono.from(connection.commitTransaction()).block(WAIT);
        });
        assertTrue(Queues.exists(prefix, queue, "after-close"));
    }
}
