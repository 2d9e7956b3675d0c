package io.workqueue.faults;

import io.workqueue.testing.Poll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.r2dbc.pool.ConnectionPool;
import io.workqueue.Entry;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.migrations.WorkQueueMigrations;
import java.time.Duration;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
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
 * Scenario 6: one key's work always fails, and it sits at the head of the queue (highest
 * priority, released with no delay, so every claim would pick it first). With
 * {@code maxAttempts = 3} it is claimed three times, then stalls — counted by
 * {@code stats().stalled}, its last error kept — and the worker drains everything else. Without a
 * limit, the same worker is shown doing nothing but the poison item.
 */
@ExtendWith(ExpectedLogs.class)
class PoisonItemFaultIT {
    private static final Logger log = LoggerFactory.getLogger(PoisonItemFaultIT.class);
    private static final String POISON = "poison";
    private static final int HEALTHY = 500;
    private static final int MAX_ATTEMPTS = 3;

    private ConnectionPool pool;

    @AfterEach
    void cleanUp() {
        if (pool != null) {
            pool.disposeLater().block(Duration.ofSeconds(30)); // bounded: a stuck close fails the test, not CI
        }
    }

    @Test
    void aKeyThatAlwaysFailsStallsAfterMaxAttemptsAndStarvesNothing() {
        FaultServer server = FaultServer.any();
        String prefix = server.createTable();
        pool = server.pool(4);

        // The failure this guards against: without an attempt limit, a one-at-a-time worker is
        // handed the poison item on every claim and never reaches the rest.
        ReactiveWorkQueue<String> unlimited = queue(prefix, "poison-unlimited", 0);
        Ledger control = new Ledger("poison, no attempt limit");
        enqueue(unlimited, control);
        List<String> firstFifty = worker(unlimited, control, "control").take(50).map(Item::key).collectList()
                .block(Duration.ofSeconds(60));
        assertEquals(50, firstFifty.stream().filter(POISON::equals).count(),
                "without maxAttempts the poison item takes every claim: " + firstFifty);

        ReactiveWorkQueue<String> queue = queue(prefix, "poison", MAX_ATTEMPTS);
        Ledger ledger = new Ledger("poison item");
        ledger.expectStalled(POISON, MAX_ATTEMPTS);
        enqueue(queue, ledger);
        long start = System.nanoTime();
        Queue<Throwable> failures = new ConcurrentLinkedQueue<>();
        Disposable running = worker(queue, ledger, "worker").subscribe(item -> {}, failures::add);
        Poll.until(Duration.ofSeconds(60), "every healthy key is completed",
                () -> !failures.isEmpty() || ledger.completedKeys() == HEALTHY,
                () -> ledger.completedKeys() + " completed; " + failures);
        Duration drained = Duration.ofNanos(System.nanoTime() - start);
        running.dispose();
        assertTrue(failures.isEmpty(), () -> "the worker stopped: " + failures);

        List<Ledger.Claim> poisonClaims = ledger.claimsOf(POISON);
        String lastError = server.query("SELECT last_error FROM " + WorkQueueMigrations.tableName(prefix)
                + " WHERE queue_name = $1 AND item_key = $2", queue.name(), POISON).get(0);
        assertEquals("poison: this work always fails", lastError);
        var stats = queue.stats().block(Duration.ofSeconds(30));
        assertEquals(1, stats.stalled(), "stats() counts the stalled item");
        log.info("[poison item] the poison key was claimed {} times (attempts {}) then stalled (stats {}, last error"
                        + " \"{}\"); the one-at-a-time worker completed all {} healthy keys in {} ms",
                poisonClaims.size(), poisonClaims.stream().map(Ledger.Claim::attempts).toList(), stats, lastError,
                HEALTHY, drained.toMillis());
        ledger.assertExact(Ledger.readTable(server, prefix, queue), stats, drained);
    }

    private ReactiveWorkQueue<String> queue(String prefix, String name, int maxAttempts) {
        return ReactiveWorkQueue.builder(pool, String.class)
                .config(WorkQueueConfig.builder(name).tablePrefix(prefix).maxAttempts(maxAttempts).build())
                .build();
    }

    private static void enqueue(ReactiveWorkQueue<String> queue, Ledger ledger) {
        List<String> healthy = Drain.keys("h-", 0, HEALTHY);
        queue.enqueueKeys(healthy).block(Duration.ofSeconds(30));
        queue.enqueue(List.of(Entry.of(POISON).withPriority(10))).block(Duration.ofSeconds(30));
        ledger.enqueued(healthy);
        ledger.enqueued(List.of(POISON));
    }

    /**
     * A worker taking one item at a time: the poison key's work fails and it is released at once
     * (no back-off, so it is due again immediately); every other key is completed.
     */
    private static Flux<Item<String>> worker(ReactiveWorkQueue<String> queue, Ledger ledger, String name) {
        return queue.claimStream(Duration.ofSeconds(30), Duration.ofMillis(50))
                .doOnNext(item -> ledger.claimed(item, name))
                .flatMap(item -> (item.key().equals(POISON)
                        ? queue.release(Duration.ZERO, new IllegalStateException("poison: this work always fails"),
                                item.key())
                        : queue.complete(item.key()).doOnSuccess(n -> ledger.completed(List.of(item.key()))))
                        .thenReturn(item), 1);
    }
}
