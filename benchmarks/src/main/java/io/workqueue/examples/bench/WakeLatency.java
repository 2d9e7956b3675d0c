package io.workqueue.examples.bench;

import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.spi.ConnectionFactory;
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
 * Scenario 3, wake latency: enqueue-to-claim latency for an idle worker, with a LISTEN/NOTIFY
 * listener and with the poll alone, measured in one run against the same server.
 *
 * <p>A producer enqueues one key every {@code gap}; one worker consumes {@code claimStream} and
 * completes each item. Latency is from just before the enqueue call to the item's arrival in the
 * worker, so it includes the enqueue's own (group-committed) commit. With a gap shorter than the
 * queue's {@code minWakeInterval} (default 100 ms), wakes inside the floor are held until it ends:
 * the default configuration then shows the floor, and a 1 ms floor shows the mechanism itself.
 *
 * <p>{@link Bench} runs it as part of the suite; {@link #main} runs it alone against
 * {@code WORKQUEUE_R2DBC_URL} or an embedded server. Arguments: {@code samples gapMillis pollMillis
 * minWakeMillis} (defaults 300, 120, 1000, 100).
 */
public final class WakeLatency {
    static final String PREFIX = "bench_wake";
    static final String CHANNEL = "bench_wake";

    /** One configuration: listener or poll only, the wake floor, the poll. */
    record Mode(String label, String id, boolean listen, Duration minWakeInterval, Duration poll) {}

    /**
     * {@code latenciesMillis}: enqueue call to arrival in the worker; {@code enqueueMillis}: enqueue
     * call to its commit (the part of the latency spent before any wakeup can be sent).
     */
    record Result(Mode mode, int samples, Duration gap, List<Double> latenciesMillis, List<Double> enqueueMillis) {
        double p(double percentile) {
            return Percentiles.of(latenciesMillis, percentile);
        }
    }

    public static void main(String[] args) throws Exception {
        int samples = args.length > 0 ? Integer.parseInt(args[0]) : 300;
        Duration gap = Duration.ofMillis(args.length > 1 ? Long.parseLong(args[1]) : 120);
        Duration poll = Duration.ofMillis(args.length > 2 ? Long.parseLong(args[2]) : 1_000);
        Duration floor = Duration.ofMillis(args.length > 3 ? Long.parseLong(args[3]) : 100);
        try (DemoDatabase database = DemoDatabase.start()) {
            System.out.println("Wake latency: using " + database.description());
            System.out.printf(Locale.ROOT, "%d samples, one enqueue every %d ms, poll %d ms, minWakeInterval %d ms%n",
                    samples, gap.toMillis(), poll.toMillis(), floor.toMillis());
            ConnectionPool pool = database.pool(4);
            Result withListener = measure(database.plainFactory(), pool,
                    new Mode("LISTEN/NOTIFY wakeups", "listener", true, floor, poll), samples, gap);
            Result pollOnly = measure(database.plainFactory(), pool,
                    new Mode("poll only (" + poll.toMillis() + " ms)", "poll", false, floor, poll), samples, gap);
            System.out.println();
            System.out.println("| mode | p50 ms | p90 ms | p99 ms | max ms |");
            System.out.println("|---|---|---|---|---|");
            for (Result r : List.of(withListener, pollOnly)) {
                System.out.printf(Locale.ROOT, "| %s | %.2f | %.2f | %.2f | %.2f |%n", r.mode().label(),
                        r.p(50), r.p(90), r.p(99), r.p(100));
            }
            System.out.printf(Locale.ROOT, "%nratio of medians (poll only / listener): %.0fx%n",
                    pollOnly.p(50) / withListener.p(50));
            pool.dispose();
        }
    }

    /**
     * Measures one mode. {@code listenerFactory} must be non-pooled (the listener holds its own
     * connection); the queue's statements run on {@code pool}.
     */
    static Result measure(ConnectionFactory listenerFactory, ConnectionPool pool, Mode mode, int samples, Duration gap)
            throws InterruptedException {
        WorkQueueMigrations.apply(pool, PREFIX).block();
        PgNotificationListener listener = PgNotificationListener.builder(listenerFactory).channel(CHANNEL).build();
        WorkQueueConfig.Builder config = WorkQueueConfig.builder("wake-" + mode.id() + "-" + System.nanoTime())
                .tablePrefix(PREFIX)
                .minWakeInterval(mode.minWakeInterval());
        var builder = ReactiveWorkQueue.builder(pool, String.class);
        if (mode.listen()) {
            config.notifyChannel(CHANNEL);
            builder.wakeups(listener.wakeups());
        }
        ReactiveWorkQueue<String> queue = builder.config(config.build()).build();

        Map<String, Long> sentAt = new ConcurrentHashMap<>();
        List<Double> latencies = Collections.synchronizedList(new ArrayList<>());
        List<Double> commits = Collections.synchronizedList(new ArrayList<>());
        // Enough unrecorded rounds for the JIT to compile the enqueue, notify and claim paths: the
        // first 20 or so run interpreted and cost several times more.
        int warmup = 200;
        CountDownLatch done = new CountDownLatch(samples + warmup);
        Disposable worker = queue.claimStream(Duration.ofMinutes(1), mode.poll())
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
                    long sent = System.nanoTime();
                    sentAt.put(key, sent);
                    return queue.enqueueKeys(key).doOnSuccess(ignored -> {
                        if (i >= warmup) {
                            commits.add((System.nanoTime() - sent) / 1e6);
                        }
                    });
                })))
                .blockLast();
        if (!done.await(mode.poll().toMillis() * 2 + 30_000, TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException("not every key was claimed");
        }
        worker.dispose();
        queue.close().block();
        listener.close().block();
        Result result = new Result(mode, samples, gap, new ArrayList<>(latencies), new ArrayList<>(commits));
        System.out.printf(Locale.ROOT, "  wake %-52s p50 %7.2f  p90 %7.2f  p99 %7.2f  max %7.2f ms (enqueue commit p50 %.2f ms)%n",
                mode.label(), result.p(50), result.p(90), result.p(99), result.p(100),
                Percentiles.of(result.enqueueMillis(), 50));
        return result;
    }
}
