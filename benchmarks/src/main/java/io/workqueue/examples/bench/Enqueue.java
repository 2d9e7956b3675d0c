package io.workqueue.examples.bench;

import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.pool.PoolMetrics;
import io.r2dbc.spi.Connection;
import io.r2dbc.spi.Result;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkQueueMeters;
import io.workqueue.migrations.WorkQueueMigrations;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Scenario 2, enqueue under concurrency: {@code C} concurrent callers, each enqueueing one new key
 * at a time and the next as soon as the last has committed, for a fixed time, into an empty table.
 * Three ways, each on its own pool of the same size:
 *
 * <ul>
 *   <li>the library's {@code enqueueKeys} (group commit);
 *   <li>the baseline without group commit: each call runs the library's upsert statement for its
 *       one key on a pooled connection;
 *   <li>the ceiling: one connection issuing the library's upsert statement with 1,000 keys at a
 *       time, back to back (what a perfect group commit of 1,000 callers could reach).
 * </ul>
 *
 * Reported: items/s, transactions committed (pg_stat_database.xact_commit delta, read after the
 * pool's sessions have exited so their statistics are flushed), the library's own count of upsert
 * statements (its Micrometer flush histogram), and the peak number of connections the write path
 * held (the pool's acquired count, sampled every millisecond).
 */
final class Enqueue {
    static final String PREFIX = "bench_enq";
    static final String QUEUE = "enq";
    static final int CEILING_BATCH = 1000;

    enum Mode {
        LIBRARY("enqueue() group commit", "group_commit"),
        PER_CALL("one upsert per call (no group commit)", "statement_per_call"),
        CEILING("raw unnest upsert, 1,000 keys/statement", "unnest_ceiling");

        final String label;
        final String id;

        Mode(String label, String id) {
            this.label = label;
            this.id = id;
        }
    }

    /**
     * {@code writeBusy}: for the group commit, the share of the run's wall time during which its
     * write was in flight (the library's flush-latency timer, summed, over the elapsed time); the
     * rest is spent between writes, on the client.
     */
    record Run(Mode mode, int callers, long items, double seconds, long transactions, long statements,
            int peakConnections, double meanBatch, double writeBusy) {
        double itemsPerSecond() {
            return items / seconds;
        }
    }

    private final Db db;
    private final int seconds;
    private final int poolSize;
    private final String table = WorkQueueMigrations.tableName(PREFIX);
    private final LibrarySql sql = LibrarySql.forPrefix(PREFIX);
    private final AtomicLong keySequence = new AtomicLong();

    Enqueue(Db db, int seconds, int poolSize) {
        this.db = db;
        this.seconds = seconds;
        this.poolSize = poolSize;
        db.migrate(PREFIX);
    }

    /** Runs the library and the per-call baseline briefly, unrecorded, so the JIT has compiled their paths. */
    void warmUp() {
        System.out.println("  warming up the JVM (unrecorded runs)...");
        for (Mode mode : Mode.values()) {
            run(mode, 64, 1, true);
        }
    }

    Run run(Mode mode, int callers) {
        return run(mode, callers, seconds, false);
    }

    private Run run(Mode mode, int callers, int seconds, boolean warmUp) {
        db.exec("TRUNCATE " + table);
        String app = "bench-enqueue";
        ConnectionPool pool = db.pool(app, mode == Mode.CEILING ? 1 : poolSize);
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(pool, String.class)
                .config(WorkQueueConfig.builder(QUEUE).tablePrefix(PREFIX).build())
                .meterRegistry(registry)
                .build();
        PeakSampler peak = new PeakSampler(pool);
        long xactBefore = db.xactCommit();
        AtomicLong items = new AtomicLong();
        AtomicLong statements = new AtomicLong();
        long start = System.nanoTime();
        long deadline = start + seconds * 1_000_000_000L;
        peak.start();
        switch (mode) {
            case LIBRARY -> callers(callers, deadline, items, () -> queue.enqueueKeys(nextKey()));
            case PER_CALL -> callers(callers, deadline, items, () -> {
                statements.incrementAndGet();
                return upsert(pool, 1);
            });
            case CEILING -> Mono.defer(() -> upsert(pool, CEILING_BATCH))
                    .doOnSuccess(ignored -> {
                        items.addAndGet(CEILING_BATCH);
                        statements.incrementAndGet();
                    })
                    .repeat(() -> System.nanoTime() < deadline)
                    .blockLast();
        }
        double elapsed = (System.nanoTime() - start) / 1e9;
        peak.stop();
        queue.close().block();
        db.dispose(pool, app);
        long transactions = db.xactCommit() - xactBefore - 1; // minus the read before
        double meanBatch = 0;
        double writeBusy = Double.NaN;
        if (mode == Mode.LIBRARY) {
            DistributionSummary flushes = registry.find(WorkQueueMeters.ENQUEUE_FLUSH_SIZE).summary();
            statements.set(flushes == null ? 0 : flushes.count());
            meanBatch = flushes == null ? 0 : flushes.mean();
            // One timer per outcome (success, failure, timeout): the write was in flight in all of them.
            var latencies = registry.find(WorkQueueMeters.ENQUEUE_FLUSH_LATENCY).timers();
            writeBusy = latencies.isEmpty() ? Double.NaN
                    : latencies.stream().mapToDouble(t -> t.totalTime(TimeUnit.NANOSECONDS)).sum() / 1e9 / elapsed;
        } else {
            meanBatch = mode == Mode.CEILING ? CEILING_BATCH : 1;
        }
        Run run = new Run(mode, callers, items.get(), elapsed, transactions, statements.get(), peak.peak(), meanBatch, writeBusy);
        System.out.printf(Locale.ROOT, "  %senqueue C=%-5d %-42s %9.0f items/s, %7d statements, %7d xacts, peak %2d connections, mean batch %.1f%s%n",
                warmUp ? "(warm-up) " : "", callers, mode.label, run.itemsPerSecond(), run.statements(), run.transactions(),
                run.peakConnections(), meanBatch, Double.isNaN(writeBusy) ? "" : String.format(Locale.ROOT, ", write in flight %.0f%% of the time", 100 * writeBusy));
        return run;
    }

    /** {@code callers} concurrent loops of one call at a time until the deadline. */
    private static void callers(int callers, long deadline, AtomicLong items, java.util.function.Supplier<Mono<?>> call) {
        Flux.range(0, callers)
                .flatMap(i -> Mono.defer(call)
                        .doOnSuccess(ignored -> items.incrementAndGet())
                        .repeat(() -> System.nanoTime() < deadline)
                        .then(), callers)
                .blockLast();
    }

    private String nextKey() {
        return "e" + keySequence.incrementAndGet();
    }

    /** The library's upsert statement with {@code size} new keys, on a connection of the pool. */
    private Mono<Long> upsert(ConnectionPool pool, int size) {
        String[] keys = new String[size];
        Integer[] priorities = new Integer[size];
        Long[] delays = new Long[size];
        for (int i = 0; i < size; i++) {
            keys[i] = nextKey();
            priorities[i] = 0;
            delays[i] = 0L;
        }
        java.util.Arrays.sort(keys);
        Function<Connection, Mono<Long>> work = connection -> Flux.from(connection.createStatement(sql.enqueue)
                        .bind(0, QUEUE).bind(1, keys).bind(2, priorities).bind(3, delays)
                        .execute())
                .concatMap(Result::getRowsUpdated)
                .reduce(0L, Long::sum);
        return Mono.usingWhen(pool.create(), work, Connection::close);
    }

    /** Samples the pool's acquired-connection count every millisecond on a daemon thread. */
    static final class PeakSampler {
        private final ConnectionPool pool;
        private final AtomicInteger peak = new AtomicInteger();
        private volatile boolean running;
        private Thread thread;

        PeakSampler(ConnectionPool pool) {
            this.pool = pool;
        }

        void start() {
            running = true;
            PoolMetrics metrics = pool.getMetrics().orElseThrow();
            thread = new Thread(() -> {
                while (running) {
                    peak.accumulateAndGet(metrics.acquiredSize(), Math::max);
                    try {
                        Thread.sleep(1);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }, "pool-sampler");
            thread.setDaemon(true);
            thread.start();
        }

        void stop() {
            running = false;
            try {
                thread.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        int peak() {
            return peak.get();
        }
    }
}
