package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.testing.Queues;
import io.workqueue.testing.TableLock;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;
import org.junit.jupiter.api.extension.ExtendWith;
import io.workqueue.testing.ExpectedLogs;

/**
 * A backlog after a stall: everything that piled up while the table was locked must drain at the
 * database's pace, in writes that each fit in {@code writeTimeout}, rather than as one write too
 * large to ever commit in time.
 */
@ExtendWith(ExpectedLogs.class)
class GroupCommitBacklogIT {
    private static final Logger log = LoggerFactory.getLogger(GroupCommitBacklogIT.class);
    private static final int CALLERS = 200_000;
    private static final Duration WRITE_TIMEOUT = Duration.ofSeconds(1);
    private static final Duration DRAIN_DEADLINE = Duration.ofMinutes(3);

    @Test
    void aBacklogThatPiledUpDuringATableLockDrainsInWritesThatFitTheTimeout() throws InterruptedException {
        String prefix = TestDatabase.createTable();
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "backlog", c -> c.writeTimeout(WRITE_TIMEOUT));
        AtomicInteger succeeded = new AtomicInteger();
        AtomicInteger failed = new AtomicInteger();
        AtomicReference<Throwable> lastFailure = new AtomicReference<>();
        CountDownLatch settled = new CountDownLatch(CALLERS);

        // Assembled before the lock is taken, so that the lock lasts only as long as subscribing takes.
        List<Mono<Void>> callers = new ArrayList<>(CALLERS);
        for (int i = 0; i < CALLERS; i++) {
            callers.add(queue.enqueueKeys("k" + i).retry(2));
        }
        long released;
        try (TableLock lock = TableLock.hold(Queues.table(prefix))) {
            // The first caller's write waits on the lock; every later caller piles up behind it.
            subscribe(callers.get(0), succeeded, failed, lastFailure, settled);
            lock.awaitWaiters(1);
            for (int i = 1; i < CALLERS; i++) {
                subscribe(callers.get(i), succeeded, failed, lastFailure, settled);
            }
            lock.release();
            released = System.nanoTime();
            log.info("[backlog] {} callers piled up behind a table lock held for {} ms", CALLERS, lock.held().toMillis());
        }

        assertTrue(settled.await(DRAIN_DEADLINE.toMillis(), TimeUnit.MILLISECONDS),
                "callers still waiting after " + DRAIN_DEADLINE + ": " + settled.getCount());
        Duration drained = Duration.ofNanos(System.nanoTime() - released);
        long transactions = TestDatabase.queryLong("SELECT count(DISTINCT xmin::text) FROM " + Queues.table(prefix)
                + " WHERE queue_name = $1", queue.name());
        log.info("[backlog] drained in {} ms: {} succeeded, {} failed, rows written by {} transactions",
                drained.toMillis(), succeeded.get(), failed.get(), transactions);

        assertEquals(0, failed.get(), () -> "callers failed even after retrying; the last with " + lastFailure.get());
        assertEquals(CALLERS, succeeded.get());
        assertEquals(CALLERS, Queues.rows(prefix, queue), "every key landed");
        int bound = WorkQueueConfig.builder(queue.name()).build().maxWriteBatch();
        long largestWrite = TestDatabase.queryLong("SELECT max(n) FROM (SELECT count(*) AS n FROM "
                + Queues.table(prefix) + " WHERE queue_name = $1 GROUP BY xmin::text) AS writes", queue.name());
        assertTrue(largestWrite <= bound, "a write carried " + largestWrite + " keys, more than " + bound);
    }

    private static void subscribe(Mono<Void> caller, AtomicInteger succeeded, AtomicInteger failed,
            AtomicReference<Throwable> lastFailure, CountDownLatch settled) {
        caller.subscribe(null, e -> {
            lastFailure.set(e);
            failed.incrementAndGet();
            settled.countDown();
        }, () -> {
            succeeded.incrementAndGet();
            settled.countDown();
        });
    }
}
