package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.workqueue.Entry;
import io.workqueue.Item;
import io.workqueue.QueueClosedException;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.testing.Queues;
import io.workqueue.testing.RowLock;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/** {@code close()}: flush what is pending, then refuse enqueues; everything else keeps working. */
class CloseIT {
    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final Duration LEASE = Duration.ofMinutes(5);
    private static String prefix;

    @BeforeAll
    static void createTable() {
        prefix = TestDatabase.createTable();
    }

    @Test
    void closeFlushesPendingEnqueuesThenRefusesNewOnes() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "flush");
        queue.enqueueKeys("blocker").block(WAIT);
        CompletableFuture<Void> closed;
        CompletableFuture<Void> pending1;
        CompletableFuture<Void> pending2;
        try (RowLock lock = RowLock.hold(Queues.table(prefix), queue.name(), "blocker")) {
            CompletableFuture<Void> inFlight = queue.enqueue(Entry.of("blocker").withPriority(1)).toFuture();
            lock.awaitWaiters(1);
            pending1 = queue.enqueueKeys("pending1").toFuture();
            pending2 = queue.enqueue(Entry.of("pending2")).toFuture();
            closed = queue.close().toFuture();
            assertFalse(closed.isDone(), "close waits for the pending enqueues");
            lock.release();
            inFlight.join();
        }

        closed.join();
        assertTrue(pending1.isDone() && !pending1.isCompletedExceptionally());
        assertTrue(pending2.isDone() && !pending2.isCompletedExceptionally());
        assertTrue(Queues.exists(prefix, queue, "pending1"));
        assertTrue(Queues.exists(prefix, queue, "pending2"));

        StepVerifier.create(queue.enqueueKeys("refused1")).expectError(QueueClosedException.class).verify(WAIT);
        StepVerifier.create(queue.enqueue(Entry.of("refused2"))).expectError(QueueClosedException.class).verify(WAIT);
        StepVerifier.create(queue.enqueue(List.of(Entry.of("refused3")))).expectError(QueueClosedException.class).verify(WAIT);
        StepVerifier.create(queue.enqueueKeys(List.of("refused4"))).expectError(QueueClosedException.class).verify(WAIT);
        assertEquals(3L, Queues.rows(prefix, queue), "blocker, pending1, pending2");
    }

    @Test
    void closeIsIdempotent() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "idempotent");
        queue.enqueueKeys("a").block(WAIT);

        StepVerifier.create(queue.close()).verifyComplete();
        StepVerifier.create(queue.close()).verifyComplete();
        StepVerifier.create(queue.close()).verifyComplete();
        StepVerifier.create(queue.enqueueKeys("b")).expectError(QueueClosedException.class).verify(WAIT);
    }

    @Test
    void otherMethodsKeepWorkingAfterClose() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "after-close");
        queue.enqueue(Entry.of("held").withPriority(3), Entry.of("failed").withPriority(2), Entry.of("dropped").withPriority(1),
                Entry.of("streamed")).block(WAIT);
        List<Item<String>> held = queue.claim(3, LEASE).block(WAIT);
        queue.close().block(WAIT);

        assertEquals(List.of("held", "failed", "dropped"), held.stream().map(Item::key).toList());
        assertEquals(1L, queue.complete("held").block(WAIT), "a worker completes what it holds");
        assertEquals(1L, queue.release(Duration.ZERO, new RuntimeException("retry me"), "failed").block(WAIT));
        assertEquals(1L, queue.remove("dropped").block(WAIT));
        assertEquals(2, queue.stats().block(WAIT).ready());
        assertEquals(List.of("failed"), queue.claim(1, LEASE).block(WAIT).stream().map(Item::key).toList());
        assertEquals("streamed", queue.claimStream(LEASE, Duration.ofMillis(100)).blockFirst(WAIT).key());
        assertEquals(0L, queue.reap().block(WAIT));
        StepVerifier.create(queue.awaitWork(Duration.ofMillis(10))).verifyComplete();
    }
}
