package io.workqueue.faults;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.r2dbc.pool.ConnectionPool;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkerOptions;
import io.workqueue.testing.ChangingKeys;
import io.workqueue.testing.Poll;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.util.retry.Retry;
import org.junit.jupiter.api.extension.ExtendWith;
import io.workqueue.testing.ExpectedLogs;

/**
 * Scenario: keys whose data keeps changing, enqueued again while they are leased, while every
 * client backend is terminated at random moments. The producer raises a key's version, then
 * enqueues it (retrying a failed enqueue); {@code process()} and {@code claimStream} workers read
 * the version when a run starts, and acknowledge; acknowledgements that fail with the connection
 * are sent again, though the first may have committed. The accounting: once the producer stops
 * and the queue drains, every key's newest version was read by some run. An acknowledgement retried
 * after it had handed a key back to run again must not cancel that run; a claim lost with its
 * connection lapses and is reclaimed.
 */
@ExtendWith(ExpectedLogs.class)
class ChangingKeysFaultIT {
    private static final Logger log = LoggerFactory.getLogger(ChangingKeysFaultIT.class);
    private static final int KEYS = 200;
    private static final int ROUNDS = 8;

    private FaultServer server;
    private ConnectionPool pool;

    @AfterEach
    void cleanUp() {
        if (pool != null) {
            pool.disposeLater().block(Duration.ofSeconds(30));
        }
        if (server != null) {
            server.ensureRunning();
        }
    }

    @Test
    void everyChangeIsProcessedThoughConnectionsDieAndAcknowledgementsAreRetried() throws InterruptedException {
        server = FaultServer.controllable();
        String prefix = server.createTable();
        pool = server.pool(8);
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(pool, String.class)
                .config(WorkQueueConfig.builder("changing").tablePrefix(prefix)
                        .writeTimeout(Duration.ofSeconds(5)).build())
                .build();
        ChangingKeys keys = new ChangingKeys("c", KEYS);
        AtomicInteger retriedAcks = new AtomicInteger();
        AtomicInteger retriedEnqueues = new AtomicInteger();
        Queue<Throwable> workerEnds = new ConcurrentLinkedQueue<>();
        long seed = System.nanoTime();
        Random random = new Random(seed);
        log.info("[changing keys, connections killed] drawn with seed {}", seed);

        Duration lease = Duration.ofSeconds(3);
        List<Disposable> running = new ArrayList<>();
        for (int w = 0; w < 2; w++) {
            running.add(queue.process(keys.handler(), WorkerOptions.builder().concurrency(8).claimBatch(8).lease(lease)
                            .poll(Duration.ofMillis(50)).build())
                    .subscribe(null, workerEnds::add));
        }
        running.add(queue.claimStream(lease, Duration.ofMillis(50))
                .flatMap(item -> keys.render(item).thenReturn(item.key()), 8)
                .bufferTimeout(16, Duration.ofMillis(5), true)
                .concatMap(batch -> queue.complete(batch)
                        .doOnError(e -> retriedAcks.incrementAndGet())
                        .retryWhen(Retry.backoff(Long.MAX_VALUE, Duration.ofMillis(50)).maxBackoff(Duration.ofSeconds(1))))
                .subscribe(null, workerEnds::add));

        // The producer: each change raises the version first, then enqueues until it is acknowledged.
        Random changes = new Random(seed + 1);
        Disposable producer = Flux.interval(Duration.ofMillis(2))
                .onBackpressureDrop()
                .flatMap(tick -> {
                    return queue.enqueueKeys(keys.change(changes))
                            .doOnError(e -> retriedEnqueues.incrementAndGet())
                            .retryWhen(Retry.backoff(Long.MAX_VALUE, Duration.ofMillis(50)).maxBackoff(Duration.ofSeconds(1)));
                }, 16)
                .subscribe(null, workerEnds::add);

        long terminated = 0;
        for (int round = 0; round < ROUNDS; round++) {
            Thread.sleep(200 + random.nextInt(400)); // the fault's timing is the random variable here
            terminated += server.terminateClientBackends();
        }
        Thread.sleep(300);
        producer.dispose();
        assertTrue(terminated > 0, "the rounds found backends to terminate");
        Poll.until(Duration.ofSeconds(90), "the queue drains (lost claims lapse and are reclaimed)", () -> {
            var stats = queue.stats().onErrorResume(e -> Mono.empty()).block(Duration.ofSeconds(30));
            return stats != null && stats.pending() == 0;
        });
        running.forEach(Disposable::dispose);

        List<String> stale = keys.stale();
        log.info("[changing keys, connections killed] {} rounds terminated {} backends; {} runs for {} keys changed {}"
                        + " times; {} acknowledgements and {} enqueues retried; stale: {}", ROUNDS, terminated,
                keys.runs(), KEYS, keys.changes(), retriedAcks.get(),
                retriedEnqueues.get(), stale.size());
        assertEquals(List.of(), List.copyOf(workerEnds), "no worker or producer stream ended");
        assertEquals(List.of(), stale, "changes never processed (seed " + seed + ")");
    }
}
