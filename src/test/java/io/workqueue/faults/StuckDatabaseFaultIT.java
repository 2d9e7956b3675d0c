package io.workqueue.faults;

import io.workqueue.testing.Poll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.spi.Connection;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WriteTimeoutException;
import io.workqueue.migrations.WorkQueueMigrations;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import org.junit.jupiter.api.extension.ExtendWith;
import io.workqueue.testing.ExpectedLogs;

/**
 * Scenario 4: the database is up but stuck — another transaction holds an ACCESS EXCLUSIVE lock on
 * the queue's table, so every statement on it waits. An enqueue fails within its flush timeout with
 * an error that says so; a claim its subscriber cancels gives its connection back, and that
 * connection is usable, not still waiting on the lock behind the caller's back; when the lock goes
 * the queue works again.
 */
@ExtendWith(ExpectedLogs.class)
class StuckDatabaseFaultIT {
    private static final Logger log = LoggerFactory.getLogger(StuckDatabaseFaultIT.class);
    private static final Duration WRITE_TIMEOUT = Duration.ofSeconds(1);
    private static final int POOL_SIZE = 4;

    private ConnectionPool pool;
    private Connection holder;

    @AfterEach
    void cleanUp() {
        if (holder != null) {
            Mono.from(holder.close()).block(Duration.ofSeconds(10));
        }
        if (pool != null) {
            pool.disposeLater().block(Duration.ofSeconds(30)); // bounded: a stuck close fails the test, not CI
        }
    }

    @Test
    void aLockedTableFailsEnqueuesInTimeLeaksNoConnectionAndRecovers() {
        FaultServer server = FaultServer.any();
        String prefix = server.createTable();
        String table = WorkQueueMigrations.tableName(prefix);
        pool = server.pool(POOL_SIZE);
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(pool, String.class)
                .config(WorkQueueConfig.builder("stuck").tablePrefix(prefix).writeTimeout(WRITE_TIMEOUT).build())
                .build();
        queue.enqueueKeys("before").block(Duration.ofSeconds(10));

        holder = Mono.from(server.plain().create()).block(Duration.ofSeconds(10));
        Mono.from(holder.beginTransaction()).block(Duration.ofSeconds(10));
        Flux.from(holder.createStatement("LOCK TABLE " + table + " IN ACCESS EXCLUSIVE MODE").execute())
                .concatMap(r -> r.getRowsUpdated()).blockLast(Duration.ofSeconds(10));
        long lockedAt = System.nanoTime();

        // An enqueue: its group-committed write waits on the lock and fails at the flush timeout.
        long start = System.nanoTime();
        AtomicReference<Throwable> enqueueError = new AtomicReference<>();
        queue.enqueueKeys("during").onErrorResume(e -> {
            enqueueError.set(e);
            return Mono.empty();
        }).block(Duration.ofSeconds(30));
        Duration enqueueTook = Duration.ofNanos(System.nanoTime() - start);
        assertInstanceOf(WriteTimeoutException.class, enqueueError.get(), "the enqueue fails: " + enqueueError.get());
        assertTrue(enqueueError.get().getMessage().contains("did not commit within " + WRITE_TIMEOUT),
                enqueueError.get().getMessage());
        assertTrue(enqueueTook.compareTo(WRITE_TIMEOUT) >= 0
                        && enqueueTook.compareTo(WRITE_TIMEOUT.plusMillis(1500)) < 0,
                "the enqueue fails at its flush timeout, not before and not long after: " + enqueueTook);
        log.info("[stuck database] an enqueue on the locked table failed after {} ms: {}",
                enqueueTook.toMillis(), enqueueError.get().getMessage());

        // A claim: it waits on the lock until its subscriber gives up.
        Disposable claim = queue.claim(10, Duration.ofMinutes(1)).subscribe();
        Poll.until(Duration.ofSeconds(10), "the claim is waiting on the lock",
                () -> waitingOnLock(server, table, "SKIP LOCKED") == 1);
        claim.dispose();
        long cancelledAt = System.nanoTime();
        Poll.until(Duration.ofSeconds(10), "the pool has every connection back",
                () -> pool.getMetrics().orElseThrow().acquiredSize() == 0,
                () -> "acquired " + pool.getMetrics().orElseThrow().acquiredSize());
        Poll.until(Duration.ofSeconds(10), "no statement from the queue still waits on the lock",
                () -> waitingOnLock(server, table, "") == 0,
                () -> "still waiting: " + server.query(
                        "SELECT state || ' ' || wait_event_type || ' ' || left(query, 60) FROM pg_stat_activity"
                                + " WHERE wait_event_type = 'Lock'"));
        Duration released = Duration.ofNanos(System.nanoTime() - cancelledAt);

        // While the lock is still held, every connection of the pool serves other work at once.
        List<Integer> answers = Flux.range(0, POOL_SIZE)
                .flatMap(i -> Mono.usingWhen(pool.create(),
                        c -> Flux.from(c.createStatement("SELECT pg_sleep(0.2), 1").execute())
                                .concatMap(r -> r.map((row, meta) -> row.get(1, Integer.class))).single(),
                        Connection::close))
                .collectList()
                .block(Duration.ofSeconds(5));
        assertEquals(List.of(1, 1, 1, 1), answers);

        // The lock goes; the queue works again.
        Mono.from(holder.rollbackTransaction()).block(Duration.ofSeconds(10));
        long unlockedAt = System.nanoTime();
        queue.enqueueKeys("after").block(Duration.ofSeconds(10));
        List<String> claimed = queue.claim(10, Duration.ofMinutes(1)).block(Duration.ofSeconds(10))
                .stream().map(Item::key).sorted().toList();
        Duration recovery = Duration.ofNanos(System.nanoTime() - unlockedAt);
        assertEquals(List.of("after", "before"), claimed,
                "the timed-out enqueue did not land behind its caller's back, and the cancelled claim leased nothing");
        assertEquals(2L, queue.complete("after", "before").block(Duration.ofSeconds(10)));
        // The claim may have started a look behind its cursors, in the background on a pooled
        // connection of its own: it gives it back within a statement (seen once under load).
        Poll.until(Duration.ofSeconds(5), "every connection back after the wakeup",
                () -> pool.getMetrics().orElseThrow().acquiredSize() == 0,
                () -> "acquired " + pool.getMetrics().orElseThrow().acquiredSize());
        log.info("[stuck database] locked for {} ms; the cancelled claim's connection was back and idle within {} ms;"
                        + " after the lock went, enqueue+claim worked within {} ms; keys enqueued=2 completed=2"
                        + " duplicated=0 lost=0 (the timed-out 'during' was refused, not lost)",
                (unlockedAt - lockedAt) / 1_000_000, released.toMillis(), recovery.toMillis());
    }

    /** Statements on {@code table} whose text contains {@code fragment} and that wait on a lock. */
    private static long waitingOnLock(FaultServer server, String table, String fragment) {
        return server.queryLong("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                + " AND strpos(query, $1) > 0 AND strpos(query, $2) > 0 AND pid <> pg_backend_pid()", table, fragment);
    }
}
