package io.workqueue.examples.bench;

import io.r2dbc.pool.ConnectionPool;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.examples.support.DemoDatabase;
import io.workqueue.migrations.WorkQueueMigrations;
import io.workqueue.notify.PgNotificationListener;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Enqueue-to-claim latency for an idle worker, with a LISTEN/NOTIFY listener and with the poll
 * alone, measured in one run against the same server.
 *
 * <p>A producer enqueues one key every {@code gap} (longer than the default 100 ms wake floor, so
 * each enqueue meets an idle worker); one worker consumes {@code claimStream}. Latency is from just
 * before the enqueue call to the item's arrival in the worker, so it includes the enqueue's own
 * commit. Arguments: {@code samples gapMillis pollMillis} (defaults 300, 120, 1000).
 */
public final class WakeLatency {
    public static void main(String[] args) throws Exception {
        int samples = args.length > 0 ? Integer.parseInt(args[0]) : 300;
        Duration gap = Duration.ofMillis(args.length > 1 ? Long.parseLong(args[1]) : 120);
        Duration poll = Duration.ofMillis(args.length > 2 ? Long.parseLong(args[2]) : 1_000);
        try (DemoDatabase database = DemoDatabase.start()) {
            System.out.println("Wake latency: using " + database.description());
            System.out.printf(Locale.ROOT, "%d samples, one enqueue every %d ms, poll %d ms, default config%n",
                    samples, gap.toMillis(), poll.toMillis());
            ConnectionPool pool = database.pool(4);
            WorkQueueMigrations.apply(pool, "bench").block();
            List<Double> withListener = measure(database, pool, true, samples, gap, poll);
            List<Double> pollOnly = measure(database, pool, false, samples, gap, poll);
            System.out.println();
            System.out.println("| mode | p50 ms | p90 ms | p99 ms | max ms |");
            System.out.println("|---|---|---|---|---|");
            print("LISTEN/NOTIFY wakeups", withListener);
            print("poll only (" + poll.toMillis() + " ms)", pollOnly);
            System.out.printf(Locale.ROOT, "%nratio of medians (poll only / listener): %.0fx%n",
                    percentile(pollOnly, 50) / percentile(withListener, 50));
            pool.dispose();
        }
    }

    private static List<Double> measure(DemoDatabase database, ConnectionPool pool, boolean listen, int samples,
            Duration gap, Duration poll) throws InterruptedException {
        String channel = "bench_wake";
        PgNotificationListener listener = PgNotificationListener.builder(database.plainFactory()).channel(channel).build();
        WorkQueueConfig.Builder config = WorkQueueConfig.builder("wake-" + listen + "-" + System.nanoTime())
                .tablePrefix("bench");
        var builder = ReactiveWorkQueue.builder(pool, String.class);
        if (listen) {
            config.notifyChannel(channel);
            builder.wakeups(listener.wakeups());
        }
        ReactiveWorkQueue<String> queue = builder.config(config.build()).build();

        Map<String, Long> sentAt = new ConcurrentHashMap<>();
        List<Double> latencies = Collections.synchronizedList(new ArrayList<>());
        int warmup = 20;
        CountDownLatch done = new CountDownLatch(samples + warmup);
        Disposable worker = queue.claimStream(Duration.ofMinutes(1), poll)
                .doOnNext(item -> {
                    long arrived = System.nanoTime();
                    Long sent = sentAt.remove(item.key());
                    if (sent != null && !item.key().startsWith("warmup")) {
                        latencies.add((arrived - sent) / 1e6);
                    }
                    done.countDown();
                })
                .concatMap(item -> queue.complete(item.key()))
                .subscribe();
        // Let the worker settle into its first wait, and the listener into its session.
        Mono.delay(Duration.ofMillis(500)).block();
        Flux.range(0, samples + warmup)
                .concatMap(i -> Mono.delay(gap).then(Mono.defer(() -> {
                    String key = (i < warmup ? "warmup-" : "k-") + i;
                    sentAt.put(key, System.nanoTime());
                    return queue.enqueueKeys(key);
                })))
                .blockLast();
        if (!done.await(poll.toMillis() * 2 + 30_000, TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException("not every key was claimed");
        }
        worker.dispose();
        queue.close().block();
        listener.close().block();
        return latencies;
    }

    private static void print(String mode, List<Double> latencies) {
        System.out.printf(Locale.ROOT, "| %s | %.2f | %.2f | %.2f | %.2f |%n", mode, percentile(latencies, 50),
                percentile(latencies, 90), percentile(latencies, 99), percentile(latencies, 100));
    }

    private static double percentile(List<Double> values, double p) {
        List<Double> sorted = new ArrayList<>(values);
        Collections.sort(sorted);
        int index = (int) Math.ceil(p / 100.0 * sorted.size()) - 1;
        return sorted.get(Math.max(0, Math.min(index, sorted.size() - 1)));
    }
}
