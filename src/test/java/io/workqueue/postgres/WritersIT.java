package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.r2dbc.spi.R2dbcException;
import io.workqueue.Entry;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.Stats;
import io.workqueue.internal.SqlStates;
import io.workqueue.testing.Faults;
import io.workqueue.testing.Poll;
import io.workqueue.testing.Queues;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import io.workqueue.testing.ExpectedLogs;

/** complete, release, remove and reap: what each touches, what each leaves alone, what each counts. */
@ExtendWith(ExpectedLogs.class)
class WritersIT {
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

    private static List<String> claimedKeys(ReactiveWorkQueue<String> queue) {
        return queue.claim(100, LEASE).block(WAIT).stream().map(Item::key).toList();
    }

    // ---------------------------------------------------------------- complete

    @Test
    void completeMarksItemsCompletedDropsTheLeaseAndIgnoresUnknownKeys() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "complete");
        queue.enqueueKeys("leased", "pending").block(WAIT);
        queue.claim(1, LEASE).block(WAIT);

        assertEquals(2L, queue.complete("leased", "pending", "unknown", "leased").block(WAIT),
                "counts items completed, not arguments");
        assertEquals("false", column(queue, "leased", "completed_at IS NULL"));
        assertEquals("false", column(queue, "pending", "completed_at IS NULL"));
        assertEquals("true", column(queue, "leased", "lease_until = 'epoch'"));
        assertFalse(Queues.exists(prefix, queue, "unknown"), "an unknown key is not created");
        assertEquals(Stats.of(0, 0, 0, 0, 2, Duration.ZERO), queue.stats().block(WAIT));
        assertEquals(List.of(), claimedKeys(queue));
    }

    @Test
    void completeIsIdempotent() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "idempotent");
        queue.enqueueKeys("a").block(WAIT);
        assertEquals(1L, queue.complete("a").block(WAIT));
        String completedAt = column(queue, "a", "completed_at");

        assertEquals(0L, queue.complete("a").block(WAIT));
        assertEquals(0L, queue.complete(List.of()).block(WAIT));
        assertEquals(completedAt, column(queue, "a", "completed_at"), "a second complete changes nothing");
    }

    @Test
    void completeClearsTheLastError() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "clears");
        queue.enqueueKeys("a").block(WAIT);
        queue.claim(1, LEASE).block(WAIT);
        queue.release(Duration.ZERO, new IllegalStateException("boom"), "a").block(WAIT);
        assertEquals("boom", column(queue, "a", "last_error"));
        queue.claim(1, LEASE).block(WAIT);

        assertEquals(1L, queue.complete("a").block(WAIT));
        assertEquals("true", column(queue, "a", "last_error IS NULL"));
    }

    @Test
    void writersOnlyTouchTheirOwnQueue() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "own");
        ReactiveWorkQueue<String> neighbour = Queues.fresh(prefix, "own-neighbour");
        neighbour.enqueueKeys("a", "b", "c").block(WAIT);
        neighbour.claim(0, LEASE).block(WAIT);
        queue.enqueueKeys("a", "b", "c").block(WAIT);

        assertEquals(1L, queue.complete("a").block(WAIT));
        assertEquals(1L, queue.release(Duration.ofHours(1), new RuntimeException("x"), "b").block(WAIT));
        assertEquals(1L, queue.remove("c").block(WAIT));

        assertEquals(Stats.of(3, 0, 3, 0, 0, Duration.ZERO), neighbour.stats().block(WAIT));
        for (String key : List.of("a", "b", "c")) {
            assertEquals("true", column(neighbour, key, "last_error IS NULL AND lease_until > now() AND completed_at IS NULL"));
        }
    }

    // ---------------------------------------------------------------- release

    @Test
    void releaseDropsTheLeaseRecordsTheCauseAndKeepsAttempts() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "release");
        queue.enqueueKeys("a").block(WAIT);
        queue.claim(1, LEASE).block(WAIT);

        assertEquals(1L, queue.release(Duration.ZERO, new RuntimeException("transient failure"), List.of("a", "unknown"))
                .block(WAIT));
        assertEquals("true", column(queue, "a", "lease_until = 'epoch'"));
        assertEquals("transient failure", column(queue, "a", "last_error"));
        assertEquals("1", column(queue, "a", "attempts"));
        assertEquals(List.of(Item.of("a", 0, 2, false)), queue.claim(1, LEASE).block(WAIT));
    }

    @Test
    void releaseCannotResurrectACompletedItem() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "resurrect");
        queue.enqueueKeys("a").block(WAIT);
        queue.claim(1, LEASE).block(WAIT);
        queue.complete("a").block(WAIT);

        assertEquals(0L, queue.release(Duration.ZERO, new RuntimeException("late"), "a").block(WAIT));
        assertEquals("false", column(queue, "a", "completed_at IS NULL"));
        assertEquals("true", column(queue, "a", "last_error IS NULL"));
        assertEquals(1, queue.stats().block(WAIT).completed());
        assertEquals(List.of(), claimedKeys(queue));
    }

    @Test
    void releaseBoundsTheRecordedMessageTo1024Characters() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "bounded");
        queue.enqueueKeys("long", "exact").block(WAIT);
        String message = "x".repeat(1000) + "y".repeat(1000);

        queue.release(Duration.ZERO, new RuntimeException(message), "long").block(WAIT);
        queue.release(Duration.ZERO, new RuntimeException("z".repeat(1024)), "exact").block(WAIT);

        assertEquals(message.substring(0, 1024), column(queue, "long", "last_error"));
        assertEquals("z".repeat(1024), column(queue, "exact", "last_error"));
    }

    @Test
    void releaseWithANullCauseStoresNull() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "nullcause");
        queue.enqueueKeys("a").block(WAIT);
        queue.release(Duration.ZERO, new RuntimeException("first"), "a").block(WAIT);
        assertEquals("first", column(queue, "a", "last_error"));

        assertEquals(1L, queue.release(Duration.ZERO, null, "a").block(WAIT));
        assertEquals("true", column(queue, "a", "last_error IS NULL"));
    }

    @Test
    void releaseWithANegativeDelayMakesTheItemAvailableNowNotInThePast() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "negative");
        queue.enqueue(Entry.of("a").withPriority(1), Entry.of("b")).block(WAIT);
        queue.claim(1, LEASE).block(WAIT);

        assertEquals(1L, queue.release(Duration.ofHours(-1), null, "a").block(WAIT));
        // Taken literally, -1h would put it an hour before it was enqueued.
        assertEquals("true", column(queue, "a", "available_at >= enqueued_at"));
        assertEquals("true", column(queue, "a", "available_at <= now()"));
        assertEquals(List.of("a", "b"), claimedKeys(queue));
    }

    @Test
    void releaseWithADelayHoldsTheItemBackOnTheDatabaseClock() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "delay");
        queue.enqueueKeys("a").block(WAIT);
        queue.claim(1, LEASE).block(WAIT);

        queue.release(Duration.ofHours(1), null, "a").block(WAIT);
        assertEquals(List.of(), claimedKeys(queue));
        assertEquals("true", column(queue, "a",
                "available_at BETWEEN now() + INTERVAL '59 minutes' AND now() + INTERVAL '1 hour'"));

        queue.release(Duration.ofMillis(200), null, "a").block(WAIT);
        List<String> again = Poll.until(WAIT, "a 200ms release delay to pass", () -> claimedKeys(queue), k -> !k.isEmpty());
        assertEquals(List.of("a"), again);
    }

    // ---------------------------------------------------------------- remove

    @Test
    void removeDeletesLeasedPendingAndCompletedItemsAndCountsThem() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "remove");
        ReactiveWorkQueue<String> neighbour = Queues.fresh(prefix, "neighbour");
        queue.enqueue(Entry.of("leased").withPriority(1), Entry.of("pending"), Entry.of("completed"), Entry.of("kept"))
                .block(WAIT);
        neighbour.enqueueKeys("leased").block(WAIT);
        queue.claim(1, LEASE).block(WAIT);
        queue.complete("completed").block(WAIT);

        assertEquals(3L, queue.remove("leased", "pending", "completed", "unknown", "pending").block(WAIT));
        assertEquals(1L, Queues.rows(prefix, queue));
        assertEquals(List.of("kept"), claimedKeys(queue));
        assertEquals(1L, Queues.rows(prefix, neighbour), "another queue's row with the same key is untouched");
        assertEquals(0L, queue.remove("leased").block(WAIT));
    }

    // ---------------------------------------------------------------- reap

    @Test
    void reapDeletesOnlyCompletedItemsOlderThanRetentionAtMostABatchPerCall() {
        String name = TestDatabase.uniqueName("reap");
        ReactiveWorkQueue<String> queue = Queues.over(TestDatabase.pool(), prefix, name,
                c -> c.retention(Duration.ofSeconds(1)).reapBatchSize(2));
        // The same logical queue seen with a long retention: nothing it holds is old enough.
        ReactiveWorkQueue<String> patient = Queues.over(TestDatabase.pool(), prefix, name,
                c -> c.retention(Duration.ofHours(1)).reapBatchSize(2));
        ReactiveWorkQueue<String> neighbour = Queues.fresh(prefix, "reap-neighbour", c -> c.retention(Duration.ofSeconds(1)));
        List<String> done = IntStream.range(0, 5).mapToObj(i -> "done" + i).toList();
        queue.enqueueKeys(done).block(WAIT);
        queue.enqueueKeys("pending", "leased").block(WAIT);
        neighbour.enqueueKeys("done0").block(WAIT);
        queue.complete(done).block(WAIT);
        neighbour.complete("done0").block(WAIT);
        queue.claim(1, LEASE).block(WAIT);
        assertEquals(0L, patient.reap().block(WAIT), "completed within the hour");

        long first = Poll.until(WAIT, "completed items to pass a 1s retention", () -> queue.reap().block(WAIT), n -> n > 0);
        assertEquals(2L, first, "at most reapBatchSize per call");
        assertEquals(2L, queue.reap().block(WAIT));
        assertEquals(1L, queue.reap().block(WAIT));
        assertEquals(0L, queue.reap().block(WAIT));

        assertEquals(2L, Queues.rows(prefix, queue), "pending and leased items are never reaped");
        Stats stats = queue.stats().block(WAIT);
        assertEquals(0, stats.completed());
        assertEquals(2, stats.pending());
        assertEquals(1L, Queues.rows(prefix, neighbour), "another queue's completed items are its own to reap");
    }

    // ---------------------------------------------------------------- retries

    @Test
    void aWriteThatPostgresAsksToRetryRunsAgainUpToWriteAttempts() {
        String isolated = TestDatabase.createTable();
        ReactiveWorkQueue<String> queue = Queues.fresh(isolated, "retry", c -> c.writeAttempts(3));
        queue.enqueueKeys("a").block(WAIT);
        Faults.failRows(isolated, "UPDATE", 2, SqlStates.SERIALIZATION_FAILURE);

        assertEquals(1L, queue.complete("a").block(WAIT), "two serialization failures, then the third run commits");
        assertEquals(3L, Faults.rowsSeen(isolated, "UPDATE"));
        assertEquals(1, queue.stats().block(WAIT).completed());
    }

    @Test
    void aRetryableWriteFailureSurfacesOnceWriteAttemptsAreSpent() {
        String isolated = TestDatabase.createTable();
        ReactiveWorkQueue<String> queue = Queues.fresh(isolated, "spent", c -> c.writeAttempts(2));
        queue.enqueueKeys("a").block(WAIT);
        Faults.failRows(isolated, "UPDATE", 2, SqlStates.DEADLOCK_DETECTED);

        RuntimeException error = assertThrows(RuntimeException.class, () -> queue.release(Duration.ZERO, null, "a").block(WAIT));
        assertEquals(SqlStates.DEADLOCK_DETECTED, SqlStates.sqlState(error));
        assertEquals(2L, Faults.rowsSeen(isolated, "UPDATE"));
        assertEquals(1L, queue.release(Duration.ZERO, null, "a").block(WAIT), "the next write is unaffected");
    }

    @Test
    void anyOtherWriteFailureIsNotRetried() {
        String isolated = TestDatabase.createTable();
        ReactiveWorkQueue<String> queue = Queues.fresh(isolated, "fatal", c -> c.writeAttempts(5));
        queue.enqueueKeys("a").block(WAIT);
        Faults.failRows(isolated, "UPDATE", 1, "P0001");

        RuntimeException error = assertThrows(RuntimeException.class, () -> queue.complete("a").block(WAIT));
        assertInstanceOf(R2dbcException.class, rootR2dbc(error));
        assertEquals("P0001", SqlStates.sqlState(error));
        assertEquals(1L, Faults.rowsSeen(isolated, "UPDATE"), "ran once");
        assertEquals("true", Queues.column(isolated, queue, "a", "completed_at IS NULL"));
    }

    private static Throwable rootR2dbc(Throwable error) {
        for (Throwable t = error; t != null; t = t.getCause()) {
            if (t instanceof R2dbcException) {
                return t;
            }
        }
        return error;
    }
}
