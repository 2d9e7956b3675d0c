package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkerOptions;
import io.workqueue.testing.ChangingKeys;
import io.workqueue.testing.Poll;
import io.workqueue.testing.Queues;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The user's view of "an enqueue during a lease is never lost", under load: a producer changes
 * the data behind random keys (a version per key, raised before each enqueue) while
 * {@code process()} and {@code claimStream} workers render them, each run reading the version
 * when it starts. Once the producer stops and the queue drains, every key's newest version has
 * been read by some run: no change went unprocessed.
 */
class EnqueueDuringLeaseUnderLoadIT {
    private static final Logger log = LoggerFactory.getLogger(EnqueueDuringLeaseUnderLoadIT.class);
    private static final Duration WAIT = Duration.ofSeconds(60);

    @Test
    void everyKeysNewestChangeIsProcessed() {
        String prefix = TestDatabase.createTable();
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "changing");
        ChangingKeys keys = new ChangingKeys("t", 100);
        long seed = new Random().nextLong();
        log.info("[changing keys] seed {}", seed);

        List<Disposable> workers = new ArrayList<>();
        for (int w = 0; w < 2; w++) {
            workers.add(queue.process(keys.handler(), WorkerOptions.builder().concurrency(8).claimBatch(8)
                    .lease(Duration.ofSeconds(30)).poll(Duration.ofMillis(20)).build()).subscribe());
        }
        workers.add(queue.claimStream(Duration.ofSeconds(30), Duration.ofMillis(20))
                .flatMap(item -> keys.render(item).thenReturn(item.key()), 8)
                .bufferTimeout(16, Duration.ofMillis(5), true)
                .concatMap(queue::complete)
                .subscribe());

        Random random = new Random(seed);
        Flux.range(0, 3000)
                .concatMap(i -> {
                    List<String> batch = new ArrayList<>();
                    for (int j = 0, n = 1 + random.nextInt(4); j < n; j++) {
                        batch.add(keys.change(random)); // the data changes, then the key is enqueued
                    }
                    return queue.enqueueKeys(batch).then(Mono.delay(Duration.ofMillis(random.nextInt(3))));
                }, 0)
                .then()
                .block(WAIT);

        Poll.until(WAIT, "the queue drains", () -> {
            var stats = queue.stats().block(WAIT);
            return stats.pending() == 0;
        });
        workers.forEach(Disposable::dispose);

        List<String> stale = keys.stale();
        log.info("[changing keys] {} runs for 100 keys changed {} times; stale: {}", keys.runs(), keys.changes(),
                stale.size());
        assertEquals(List.of(), stale, "changes never processed (seed " + seed + ")");
        assertTrue(keys.runs() > 100, "the workers ran");
    }
}
