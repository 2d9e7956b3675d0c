package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkerOptions;
import io.workqueue.testing.Poll;
import io.workqueue.testing.Queues;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
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
        int keys = 100;
        Map<String, AtomicLong> version = new ConcurrentHashMap<>();
        Map<String, AtomicLong> newestRead = new ConcurrentHashMap<>();
        for (int i = 0; i < keys; i++) {
            version.put("t" + i, new AtomicLong());
            newestRead.put("t" + i, new AtomicLong(-1));
        }
        AtomicInteger runs = new AtomicInteger();
        SplittableRandom seeds = new SplittableRandom();
        long seed = seeds.nextLong();
        log.info("[changing keys] seed {}", seed);

        List<Disposable> workers = new ArrayList<>();
        // A run reads the data when it starts, takes a little while, then succeeds.
        java.util.function.Function<Item<String>, Mono<Void>> render = item -> Mono.defer(() -> {
            long read = version.get(item.key()).get();
            newestRead.get(item.key()).accumulateAndGet(read, Math::max);
            runs.incrementAndGet();
            return Mono.delay(Duration.ofMillis(item.key().hashCode() & 7)).then();
        });
        for (int w = 0; w < 2; w++) {
            workers.add(queue.process(render, WorkerOptions.builder().concurrency(8).claimBatch(8)
                    .lease(Duration.ofSeconds(30)).poll(Duration.ofMillis(20)).build()).subscribe());
        }
        workers.add(queue.claimStream(Duration.ofSeconds(30), Duration.ofMillis(20))
                .flatMap(item -> render.apply(item).thenReturn(item.key()), 8)
                .bufferTimeout(16, Duration.ofMillis(5), true)
                .concatMap(queue::complete)
                .subscribe());

        SplittableRandom random = new SplittableRandom(seed);
        Flux.range(0, 3000)
                .concatMap(i -> {
                    List<String> batch = new ArrayList<>();
                    for (int j = 0, n = 1 + random.nextInt(4); j < n; j++) {
                        String key = "t" + random.nextInt(keys);
                        version.get(key).incrementAndGet(); // the data changes, then the key is enqueued
                        batch.add(key);
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

        List<String> stale = new ArrayList<>();
        version.forEach((key, v) -> {
            if (newestRead.get(key).get() != v.get()) {
                stale.add(key + " newest " + v.get() + " read " + newestRead.get(key).get());
            }
        });
        log.info("[changing keys] {} runs for {} keys changed {} times; stale: {}", runs.get(), keys,
                version.values().stream().mapToLong(AtomicLong::get).sum(), stale.size());
        assertEquals(List.of(), stale, "changes never processed (seed " + seed + ")");
        assertTrue(runs.get() > keys, "the workers ran");
    }
}
