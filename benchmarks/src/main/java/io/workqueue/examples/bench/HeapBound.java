package io.workqueue.examples.bench;

import io.r2dbc.pool.ConnectionPool;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.migrations.WorkQueueMigrations;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * Scenario 5, heap bounded by demand: {@code claimStream} drains a backlog of {@code n} keys into a
 * deliberately slow consumer (each item takes {@code itemMillis}, at most {@code inFlight} at a
 * time, completions batched by 100), while a sampler records the heap used after a full GC
 * (MemoryMXBean, after System.gc()) every second and, every fifth second, how many items the queue has leased.
 *
 * <p>Bounded by demand means: the used heap stays flat however large the backlog, and leases stay
 * at about {@code inFlight}. For scale, the heap that the backlog itself would take as a list of
 * {@code Item}s is measured the same way.
 */
final class HeapBound {
    static final String PREFIX = "bench_heap";
    static final String QUEUE = "heap";

    record Sample(double seconds, long completed, long usedHeapBytes, long leased) {}

    record Result(int backlog, int inFlight, int itemMillis, long baselineHeapBytes, long backlogAsListBytes,
            List<Sample> samples, long completed, double seconds, boolean drained) {
        long peakHeapBytes() {
            return samples.stream().mapToLong(Sample::usedHeapBytes).max().orElse(0);
        }

        long medianHeapBytes() {
            return (long) Percentiles.median(samples.stream().map(x -> (double) x.usedHeapBytes()).toList());
        }

        long peakLeased() {
            return samples.stream().mapToLong(Sample::leased).max().orElse(0);
        }
    }

    private final Db db;
    private final MemoryMXBean memory = ManagementFactory.getMemoryMXBean();

    HeapBound(Db db) {
        this.db = db;
        db.migrate(PREFIX);
    }

    Result run(int n, int inFlight, int itemMillis, int capSeconds) {
        String table = WorkQueueMigrations.tableName(PREFIX);
        db.preload(PREFIX, QUEUE, n);
        long backlogBytes = backlogAsList(n);
        long baseline = Math.min(usedAfterGc(), usedAfterGc());
        String app = "bench-heap";
        ConnectionPool pool = db.pool(app, 4);
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(pool, String.class)
                .config(WorkQueueConfig.builder(QUEUE).tablePrefix(PREFIX).build())
                .build();
        AtomicLong completed = new AtomicLong();
        CountDownLatch drained = new CountDownLatch(1);
        long start = System.nanoTime();
        Disposable consumer = queue.claimStream(Duration.ofMinutes(10), Duration.ofMillis(100))
                .flatMap(item -> Mono.delay(Duration.ofMillis(itemMillis)).thenReturn(item), inFlight, 1)
                .bufferTimeout(100, Duration.ofMillis(50), true)
                .concatMap(items -> queue.complete(items.stream().map(Item::key).toList()), 1)
                .subscribe(count -> {
                    if (completed.addAndGet(count) >= n) {
                        drained.countDown();
                    }
                }, error -> {
                    System.err.println("heap consumer failed: " + error);
                    drained.countDown();
                });
        List<Sample> samples = new ArrayList<>();
        long deadline = start + TimeUnit.SECONDS.toNanos(capSeconds);
        int tick = 0;
        try {
            while (!drained.await(1, TimeUnit.SECONDS) && System.nanoTime() < deadline) {
                long used = usedAfterGc();
                // The leased count scans the backlog's index: sample it every third tick only.
                long leased = tick++ % 5 == 0
                        ? db.queryLong("SELECT count(*) FROM " + table + " WHERE queue_name = '" + QUEUE
                                + "' AND completed_at IS NULL AND lease_until > now()")
                        : -1;
                Sample sample = new Sample((System.nanoTime() - start) / 1e9, completed.get(), used - baseline, leased);
                samples.add(sample);
                System.out.printf(Locale.ROOT, "  heap t=%5.1f s completed %,9d  heap above baseline %6.1f MiB%s%n",
                        sample.seconds(), sample.completed(), sample.usedHeapBytes() / 1048576.0,
                        leased >= 0 ? "  leased " + leased : "");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        consumer.dispose();
        Db.sleep(200);
        db.dispose(pool, app);
        if (samples.isEmpty()) {
            samples.add(new Sample(seconds, completed.get(), usedAfterGc() - baseline, -1));
        }
        Result result = new Result(n, inFlight, itemMillis, baseline, backlogBytes, samples, completed.get(), seconds,
                completed.get() >= n);
        System.out.printf(Locale.ROOT, "  heap: drained %,d of %,d in %.1f s; peak heap above baseline %.1f MiB"
                        + " (the backlog as a List<Item> would take %.1f MiB); peak leased %d%n",
                result.completed(), n, seconds, result.peakHeapBytes() / 1048576.0, backlogBytes / 1048576.0,
                result.peakLeased());
        return result;
    }

    private long usedAfterGc() {
        System.gc();
        return memory.getHeapMemoryUsage().getUsed();
    }

    /** The retained heap of the backlog held as a list of items, measured as used-after-GC before and after. */
    private long backlogAsList(int n) {
        long before = usedAfterGc();
        List<Item<String>> list = new ArrayList<>(n);
        for (int i = 1; i <= n; i++) {
            list.add(Item.of(String.format(Locale.ROOT, "k%08d", i), 0, 1, false));
        }
        long after = usedAfterGc();
        if (list.size() != n) {
            throw new AssertionError();
        }
        return after - before;
    }
}
