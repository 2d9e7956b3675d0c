package io.workqueue.examples.pipeline;

import io.r2dbc.pool.ConnectionPool;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.Stats;
import io.workqueue.WorkQueueConfig;
import io.workqueue.examples.support.DemoDatabase;
import io.workqueue.migrations.WorkQueueMigrations;
import io.workqueue.notify.PgNotificationListener;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.LongStream;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * One worker written as a single Reactor pipeline: claim, work with bounded concurrency, complete in
 * batches, release failures with back-off.
 *
 * <pre>
 * claimStream(lease, poll)                      leases only what downstream has requested
 *   .flatMap(work, CONCURRENCY)                 at most CONCURRENCY items being worked on
 *   .bufferTimeout(BATCH, WINDOW, true)         batches of finished keys, emitted only on demand
 *   .concatMap(queue::complete, 1)              one complete statement at a time, one batch queued
 * </pre>
 *
 * <p><b>Backpressure.</b> Demand flows right to left, and leases follow demand. {@code concatMap}
 * asks for one batch at a time; the fair {@code bufferTimeout} turns requested batches into
 * requests for keys (it prefetches up to four batches); {@code flatMap} never has more than
 * {@code CONCURRENCY} items outstanding from its source and replaces one only after its result has
 * been passed on; and {@code claimStream} leases exactly what has been requested and not yet
 * delivered. So when a stage is slow the stages before it fill up one after another and claiming
 * stops. Nothing is leased ahead of the work: every lease this process holds is an item being worked
 * on (at most {@code CONCURRENCY}) or a finished key waiting for its {@code complete} (at most the
 * batches held between {@code bufferTimeout} and {@code concatMap}), so leases do not lapse while
 * items wait in a buffer for a worker. The program measures this and fails if the leases it holds
 * ever exceed {@code CONCURRENCY + 6 * BATCH} (four batches prefetched, one queued in
 * {@code concatMap}, one being completed). An unbounded stage anywhere downstream of the claim (a
 * {@code flatMap} without a concurrency argument, a {@code publishOn} with a large prefetch, a
 * {@code concatMap} with its default prefetch of 32 batches) would raise or remove that bound.
 *
 * <p>The plain {@code bufferTimeout(maxSize, maxTime)} does not wait for demand: when its timer
 * fires it emits the partial batch, or fails with an {@code OverflowException} if downstream has
 * not asked for one, which is exactly the case behind a {@code concatMap} busy with the previous
 * batch. The fair variant (third argument {@code true}) holds the batch until it is requested.
 *
 * <p><b>Cancellation.</b> Cancelling the subscription (here: {@code takeUntil} once every key is
 * completed, or the deadline) travels up the chain: the running {@code complete} is cancelled (its
 * connection goes back to the pool; the statement either committed or not, and completing again is
 * harmless), the keys in the buffers are dropped, the work in {@code flatMap} is cancelled, and
 * {@code claimStream} stops claiming. Nothing is rolled back by hand and nothing needs to be: every
 * lease the pipeline held and did not settle lapses on the database clock, and the item is handed
 * out again, flagged {@link Item#reclaimed()}. Delivery is at-least-once, so work must be idempotent.
 *
 * <p>Run it with {@code --smoke} for a small, fast run (what CI runs). Exits with status 1 if any
 * key was lost or the lease bound was broken.
 */
public final class Pipeline {
    private static final String TABLE_PREFIX = "pipeline_demo";
    private static final String CHANNEL = "pipeline_demo_work";
    /** Long enough that nothing lapses in a healthy run; a crashed worker's items come back after it. */
    private static final Duration LEASE = Duration.ofSeconds(30);
    /**
     * How long a short claim waits before claiming again. Enqueues wake it at once through
     * LISTEN/NOTIFY; items released with a back-off send no wakeup, so the poll is what picks them up.
     */
    private static final Duration POLL = Duration.ofMillis(250);
    private static final int CONCURRENCY = 32;
    private static final int BATCH = 50;
    private static final Duration BATCH_WINDOW = Duration.ofMillis(50);
    private static final Duration DEADLINE = Duration.ofMinutes(2);

    private final Set<Long> processed = ConcurrentHashMap.newKeySet();
    private final AtomicLong runs = new AtomicLong();
    private final AtomicLong failures = new AtomicLong();
    private final AtomicLong reclaimed = new AtomicLong();
    /** Items leased and not yet completed or released: the leases this process holds. */
    private final AtomicLong held = new AtomicLong();
    private final AtomicLong peakHeld = new AtomicLong();

    public static void main(String[] args) throws Exception {
        boolean smoke = List.of(args).contains("--smoke");
        int jobs = smoke ? 2_000 : 20_000;
        boolean passed;
        try (DemoDatabase database = DemoDatabase.start()) {
            System.out.println("Pipeline: using " + database.description());
            passed = new Pipeline().run(database, jobs);
        }
        if (!passed) {
            System.exit(1);
        }
    }

    private boolean run(DemoDatabase database, int jobs) {
        ConnectionPool pool = database.pool(8);
        PgNotificationListener listener = PgNotificationListener.builder(database.plainFactory())
                .channel(CHANNEL)
                .build();
        try {
            // A fresh queue name per run, so runs against a shared server never see each other's rows.
            WorkQueueConfig config = WorkQueueConfig.builder("pipeline-" + Long.toHexString(System.nanoTime()))
                    .tablePrefix(TABLE_PREFIX)
                    .notifyChannel(CHANNEL)
                    .build();
            WorkQueueMigrations.apply(pool, config).block(Duration.ofSeconds(30));
            ReactiveWorkQueue<Long> queue = ReactiveWorkQueue.builder(pool, Long.class)
                    .config(config)
                    .wakeups(listener.wakeups())
                    .build();

            List<Long> keys = LongStream.range(0, jobs).boxed().toList();
            Flux.fromIterable(keys)
                    .buffer(500)
                    .flatMap(queue::enqueueKeys, 4) // concurrent callers: the group commit merges them
                    .then()
                    .block(Duration.ofMinutes(1));

            long start = System.nanoTime();
            Long completed = pipeline(queue)
                    .scan(0L, Long::sum)
                    // complete() counts rows it actually completed, so this reaches `jobs` exactly
                    // when every key is done, however often a key was worked on.
                    .takeUntil(done -> done >= jobs)
                    .take(DEADLINE) // a stuck run ends as a failure rather than hanging CI
                    .blockLast();
            double seconds = (System.nanoTime() - start) / 1e9;

            Stats stats = queue.stats().block(Duration.ofSeconds(10));
            queue.close().block(Duration.ofSeconds(10));
            // Leave a shared server as we found it: nobody would reap this run's queue name.
            queue.remove(keys).block(Duration.ofSeconds(30));
            return summary(keys, completed == null ? 0 : completed, stats, seconds);
        } finally {
            listener.close().block(Duration.ofSeconds(10));
            pool.dispose();
        }
    }

    /** The worker; emits, per batch, how many items its complete statement completed. */
    private Flux<Long> pipeline(ReactiveWorkQueue<Long> queue) {
        return queue.claimStream(LEASE, POLL)
                .doOnNext(this::leased)
                .flatMap(item -> process(queue, item), CONCURRENCY)
                .bufferTimeout(BATCH, BATCH_WINDOW, true)
                // Prefetch 1: while one batch completes, at most one more waits. The default (32)
                // would let finished keys pile up here, still leased, waiting to be acknowledged.
                .concatMap(batch -> queue.complete(batch).doOnNext(n -> settled(batch.size())), 1);
    }

    /**
     * Works on one item: emits its key when done; on failure releases it with a back-off that grows
     * with its attempts, recording the error, and emits nothing.
     */
    private Mono<Long> process(ReactiveWorkQueue<Long> queue, Item<Long> item) {
        return work(item)
                .thenReturn(item.key())
                .onErrorResume(error -> {
                    failures.incrementAndGet();
                    return queue.release(backoff(item.attempts()), error, item.key())
                            .doOnNext(n -> settled(1))
                            // A release that fails costs nothing but time: the lease lapses and the
                            // item comes back. It is no reason to stop the worker.
                            .onErrorResume(releaseError -> Mono.empty())
                            .then(Mono.empty());
                });
    }

    /**
     * Simulated work: a few milliseconds, failing deterministically for some keys so the release path
     * is exercised on every run (every 10th key fails its first attempt, every 97th its first three).
     */
    private Mono<Void> work(Item<Long> item) {
        long key = item.key();
        return Mono.delay(Duration.ofMillis(ThreadLocalRandom.current().nextInt(1, 6)))
                .then(Mono.fromRunnable(() -> {
                    runs.incrementAndGet();
                    int failuresPlanned = key % 97 == 0 ? 3 : key % 10 == 0 ? 1 : 0;
                    if (item.attempts() <= failuresPlanned) {
                        throw new IllegalStateException("job " + key + " failed on attempt " + item.attempts());
                    }
                    processed.add(key);
                }));
    }

    /** 20 ms, 40 ms, 80 ms, ... up to one second. */
    private static Duration backoff(int attempts) {
        return Duration.ofMillis(Math.min(1_000, 20L << Math.min(attempts - 1, 10)));
    }

    private void leased(Item<Long> item) {
        if (item.reclaimed()) {
            reclaimed.incrementAndGet();
        }
        peakHeld.accumulateAndGet(held.incrementAndGet(), Math::max);
    }

    private void settled(int items) {
        held.addAndGet(-items);
    }

    private boolean summary(List<Long> keys, long completed, Stats stats, double seconds) {
        long lost = keys.stream().filter(key -> !processed.contains(key)).count();
        long bound = CONCURRENCY + 6L * BATCH;
        System.out.printf(Locale.ROOT, "%d jobs in %.2f s (%.0f jobs/s): %d completed, %d runs, %d failures released"
                        + " with back-off, %d reclaimed%n",
                keys.size(), seconds, keys.size() / seconds, completed, runs.get(), failures.get(), reclaimed.get());
        System.out.printf(Locale.ROOT, "queue afterwards: pending %d, completed %d%s; peak leases held %d (bound %d)%n",
                stats.pending(), stats.completed(), stats.completedCapped() ? "+" : "", peakHeld.get(), bound);
        boolean passed = true;
        if (lost > 0 || completed != keys.size() || stats.pending() != 0) {
            System.out.println("FAIL: " + lost + " jobs never processed, " + stats.pending() + " still pending");
            passed = false;
        }
        if (peakHeld.get() > bound) {
            System.out.println("FAIL: held " + peakHeld.get() + " leases at once, more than demand allows (" + bound + ")");
            passed = false;
        }
        if (passed) {
            System.out.println("PASS: every job completed, none lost; leases never ran ahead of demand");
        }
        return passed;
    }
}
