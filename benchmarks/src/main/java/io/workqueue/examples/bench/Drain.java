package io.workqueue.examples.bench;

import io.r2dbc.pool.ConnectionPool;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueBuilder;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkerOptions;
import io.workqueue.migrations.WorkQueueMigrations;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;
import org.jspecify.annotations.Nullable;
import io.r2dbc.spi.Connection;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * Scenario 1, drain: a freshly preloaded table of {@code n} ready keys, emptied by {@code W} workers
 * at batch size {@code B}, by the library three ways and by pgbench running the library's own
 * statements two ways, each from the same starting state.
 *
 * <p>Every mode is measured the same way, from the table: items completed, divided by the time from
 * the server clock just before the workers start to the last completion's {@code completed_at}
 * (the start of the transaction that wrote it). A run ends when the queue is empty or after the
 * time cap, whichever is first; a capped run measures the rate while the queue was non-empty.
 */
final class Drain {
    static final String QUEUE = "drain";
    static final Duration LEASE = Duration.ofMinutes(5);
    static final Duration POLL = Duration.ofMillis(50);

    enum Mode {
        PGBENCH_TWO("pgbench: claim then complete (2 statements)", "pgbench_claim_then_complete"),
        LOOP("claim/complete loop", "claim_complete_loop"),
        STREAM("claimStream + bufferTimeout → complete", "claim_stream"),
        PGBENCH_ONE("pgbench: completeAndClaim (1 statement)", "pgbench_complete_and_claim"),
        PROCESS("process() worker", "process"),
        STREAM_DELETE("claimStream + bufferTimeout → complete, deleteOnComplete", "claim_stream_delete"),
        PROCESS_DELETE("process() worker, deleteOnComplete", "process_delete"),
        /** Not in run.sh's grid: HandlerThreads sets it beside {@code PROCESS}, the default pool. */
        PROCESS_DRIVER("process() worker, handlers on the driver's threads", "process_driver");

        /** The modes of run.sh's drain grid. */
        static final List<Mode> GRID = List.of(PGBENCH_TWO, LOOP, STREAM, PGBENCH_ONE, PROCESS, STREAM_DELETE,
                PROCESS_DELETE);

        final String label;
        final String id;

        Mode(String label, String id) {
            this.label = label;
            this.id = id;
        }

        boolean pgbench() {
            return this == PGBENCH_TWO || this == PGBENCH_ONE;
        }

        /** Completing deletes the row: nothing is left with a completed_at to measure by. */
        boolean deletes() {
            return this == STREAM_DELETE || this == PROCESS_DELETE;
        }

        /** The pgbench script that runs the statements this mode issues. */
        Mode baseline() {
            return this == PROCESS || this == PROCESS_DELETE || this == PROCESS_DRIVER || this == PGBENCH_ONE
                    ? PGBENCH_ONE : PGBENCH_TWO;
        }
    }

    /**
     * One run. {@code updates} and {@code hotUpdates} are the table's row updates during the run
     * (pg_stat_user_tables), so {@code hotUpdates / updates} says how many writes avoided new index
     * entries.
     */
    record Run(Mode mode, int workers, int batch, int repeat, long items, double seconds, boolean emptied,
            long updates, long hotUpdates, Plans plans, CpuMeter.Use cpu) {
        double itemsPerSecond() {
            return seconds > 0 ? items / seconds : 0;
        }
    }

    /**
     * How PostgreSQL planned the library's prepared statements on the pool's connections during a
     * run (pg_prepared_statements.generic_plans / custom_plans, summed over the connections): after
     * five executions the plan cache may switch a statement to a generic plan for good.
     */
    record Plans(long claimGeneric, long claimCustom, long completeGeneric, long completeCustom,
            long completeAndClaimGeneric, long completeAndClaimCustom) {
        static final Plans NONE = new Plans(0, 0, 0, 0, 0, 0);

        String describe() {
            StringBuilder out = new StringBuilder();
            append(out, "claim", claimGeneric, claimCustom);
            append(out, "complete", completeGeneric, completeCustom);
            append(out, "completeAndClaim", completeAndClaimGeneric, completeAndClaimCustom);
            return out.toString();
        }

        private static void append(StringBuilder out, String name, long generic, long custom) {
            if (generic + custom > 0) {
                out.append(out.length() == 0 ? "" : ", ").append(name).append(" generic/custom ").append(generic)
                        .append('/').append(custom);
            }
        }
    }

    private final Db db;
    /** Null for a drain of the library's modes only ({@link #libraryOnly}). */
    private final @Nullable Pgbench pgbench;
    private final int n;
    private final int capSeconds;
    private final UnaryOperator<WorkQueueBuilder<String>> queueOptions;
    private final String table = WorkQueueMigrations.tableName(Pgbench.PREFIX);

    Drain(Db db, Pgbench pgbench, int n, int capSeconds) {
        this(db, pgbench, n, capSeconds, UnaryOperator.identity());
    }

    /**
     * A drain whose library modes build their queue through {@code queueOptions} as well, so a
     * benchmark can compare one builder setting against its absence (ObservationCost hands in an
     * observation registry). The operator gets the builder after the config is set.
     */
    Drain(Db db, @Nullable Pgbench pgbench, int n, int capSeconds, UnaryOperator<WorkQueueBuilder<String>> queueOptions) {
        this.db = db;
        this.pgbench = pgbench;
        this.n = n;
        this.capSeconds = capSeconds;
        this.queueOptions = queueOptions;
        db.migrate(Pgbench.PREFIX);
    }

    /**
     * A drain of the library's modes only, with no pgbench baseline: it reads none of the library's
     * statements, so it also runs against the jar of an earlier version ({@link VariantDrains}).
     */
    static Drain libraryOnly(Db db, int n, int capSeconds, UnaryOperator<WorkQueueBuilder<String>> queueOptions) {
        return new Drain(db, null, n, capSeconds, queueOptions);
    }

    /** One run of {@code mode} from a freshly preloaded table. */
    Run run(Mode mode, int workers, int batch, int repeat) {
        return run(mode, workers, batch, repeat, n, capSeconds);
    }

    /**
     * Runs each library mode briefly, unrecorded, so the JIT has compiled the library's paths before
     * the first measured run (pgbench needs no warm-up).
     */
    void warmUp(int seconds) {
        warmUp(seconds, List.of(Mode.LOOP, Mode.STREAM, Mode.PROCESS, Mode.STREAM_DELETE, Mode.PROCESS_DELETE));
    }

    /** {@link #warmUp(int)} for the given modes only. */
    void warmUp(int seconds, List<Mode> modes) {
        System.out.println("  warming up the JVM (unrecorded runs)...");
        for (Mode mode : modes) {
            for (int batch : List.of(1, 100)) {
                run(mode, 4, batch, 0, Math.min(n, 20_000), seconds);
            }
        }
    }

    private Run run(Mode mode, int workers, int batch, int repeat, int n, int capSeconds) {
        db.preload(Pgbench.PREFIX, QUEUE, n);
        long[] updatesBefore = db.updates(table);
        double start = serverNow();
        Plans[] plans = {Plans.NONE};
        double[] clientSeconds = {0};
        CpuMeter.Snapshot cpuBefore = CpuMeter.take();
        long clientCount = mode.pgbench()
                ? runPgbench(mode, workers, batch, capSeconds)
                : runLibrary(mode, workers, batch, n, capSeconds, plans, clientSeconds);
        CpuMeter.Use cpu = CpuMeter.take().since(cpuBefore);
        long items;
        double seconds;
        if (mode.deletes()) {
            // Completed rows are gone: count what is missing, and time it on the client (from the
            // workers' start to the completion that reached n, or to the cap).
            items = n - db.queryLong("SELECT count(*) FROM " + table + " WHERE queue_name = '" + QUEUE + "'");
            seconds = items == 0 ? 0 : clientSeconds[0];
        } else {
            List<double[]> measured = db.query("SELECT count(*)::float8, coalesce(extract(epoch FROM max(completed_at))::float8, 0)"
                    + " FROM " + table + " WHERE queue_name = '" + QUEUE + "' AND completed_at IS NOT NULL",
                    row -> new double[] {row.get(0, Double.class), row.get(1, Double.class)});
            items = (long) measured.get(0)[0];
            seconds = items == 0 ? 0 : measured.get(0)[1] - start;
        }
        long[] updatesAfter = db.updates(table);
        Run run = new Run(mode, workers, batch, repeat, items, seconds, items >= n,
                updatesAfter[0] - updatesBefore[0], updatesAfter[1] - updatesBefore[1], plans[0], cpu);
        double[] perItem = cpu.microsPerItem(items);
        System.out.printf(Locale.ROOT, "  %sdrain W=%-2d B=%-3d %-46s %8d items in %6.2f s = %9.0f items/s, HOT %3.0f%%,"
                        + " CPU µs/item server %5.1f client %5.1f, machine %3.0f%% busy%s%n",
                repeat == 0 ? "(warm-up) " : "", workers, batch, mode.label, items, seconds, run.itemsPerSecond(),
                run.updates() == 0 ? 0.0 : 100.0 * run.hotUpdates() / run.updates(), perItem[0], perItem[1],
                100 * cpu.machineBusy(),
                mode.pgbench() || clientCount == items ? "" : " (client counted " + clientCount + ")");
        if (!mode.pgbench()) {
            System.out.println("      plans: " + plans[0].describe());
        }
        return run;
    }

    private double serverNow() {
        return db.query("SELECT extract(epoch FROM clock_timestamp())::float8", row -> row.get(0, Double.class)).get(0);
    }

    private boolean empty() {
        return db.queryLong("SELECT count(*) FROM (SELECT 1 FROM " + table + " WHERE queue_name = '" + QUEUE + "'"
                + " AND completed_at IS NULL ORDER BY priority DESC, available_at, item_key LIMIT 1) x") == 0;
    }

    private long runPgbench(Mode mode, int workers, int batch, int capSeconds) {
        if (pgbench == null) {
            throw new IllegalStateException("a drain of the library's modes only runs no " + mode.id);
        }
        String script = mode == Mode.PGBENCH_TWO ? Pgbench.CLAIM_THEN_COMPLETE : Pgbench.COMPLETE_AND_CLAIM;
        pgbench.run(script, workers, batch, capSeconds, this::empty);
        db.awaitGone("pgbench");
        return -1;
    }

    private long runLibrary(Mode mode, int workers, int batch, int n, int capSeconds, Plans[] plans,
            double[] clientSeconds) {
        String app = "bench-drain";
        // The stream pipelines a claim with the previous batch's completion: two statements per worker.
        int poolSize = mode == Mode.STREAM || mode == Mode.STREAM_DELETE ? 2 * workers : workers + 1;
        ConnectionPool pool = db.pool(app, poolSize);
        ReactiveWorkQueue<String> queue = queueOptions.apply(ReactiveWorkQueue.builder(pool, String.class)
                .config(WorkQueueConfig.builder(QUEUE).tablePrefix(Pgbench.PREFIX).maxClaimBatch(Math.max(500, batch))
                        .deleteOnComplete(mode.deletes()).build()))
                .build();
        long started = System.nanoTime();
        AtomicLong completed = new AtomicLong();
        CountDownLatch finished = new CountDownLatch(1);
        java.util.function.LongConsumer count = c -> {
            if (completed.addAndGet(c) >= n) {
                finished.countDown();
            }
        };
        List<Disposable> running = new ArrayList<>();
        for (int w = 0; w < workers; w++) {
            running.add(switch (mode) {
                case LOOP -> Mono.defer(() -> queue.claim(batch, LEASE))
                        .flatMap(items -> items.isEmpty() ? Mono.just(-1L) : queue.complete(keys(items)))
                        .repeat()
                        .takeWhile(c -> c >= 0)
                        .subscribe(count::accept, e -> System.err.println("loop worker failed: " + e));
                case STREAM, STREAM_DELETE -> queue.claimStream(LEASE, POLL)
                        .bufferTimeout(batch, Duration.ofMillis(5), true)
                        .concatMap(items -> queue.complete(keys(items)), 1)
                        .subscribe(count::accept, e -> System.err.println("stream worker failed: " + e));
                case PROCESS, PROCESS_DELETE, PROCESS_DRIVER -> queue.process(item -> Mono.empty(), processOptions(mode, batch))
                        .subscribe(item -> count.accept(1), e -> System.err.println("process worker failed: " + e));
                default -> throw new IllegalArgumentException(mode.toString());
            });
        }
        try {
            finished.await(capSeconds, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        clientSeconds[0] = (System.nanoTime() - started) / 1e9;
        running.forEach(Disposable::dispose);
        Db.sleep(200); // let cancelled workers acknowledge what they finished
        plans[0] = plans(pool, poolSize);
        db.dispose(pool, app);
        return completed.get();
    }

    /**
     * The worker's options: as many handlers as the batch; handlers on the worker's own pool (the
     * default), or, for {@link Mode#PROCESS_DRIVER}, where the claim arrived (the driver's threads).
     */
    private static WorkerOptions processOptions(Mode mode, int batch) {
        WorkerOptions.Builder options = WorkerOptions.builder().concurrency(batch).claimBatch(batch).lease(LEASE).poll(POLL);
        if (mode == Mode.PROCESS_DRIVER) {
            options.handlerScheduler(Schedulers.immediate());
        }
        return options.build();
    }

    /** Reads pg_prepared_statements on every connection of the (now idle) pool. */
    private static Plans plans(ConnectionPool pool, int size) {
        long[] counts = new long[6];
        try {
            List<Connection> connections = Flux.range(0, size).flatMap(i -> pool.create()).collectList()
                    .block(Duration.ofSeconds(10));
            for (Connection connection : connections) {
                Flux.from(connection.createStatement("SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements")
                                .execute())
                        .concatMap(result -> result.map((row, meta) -> {
                            String sql = String.valueOf(row.get(0));
                            // completeAndClaim has both CTEs; claim only "due"; complete only "done".
                            boolean claims = sql.contains("due AS MATERIALIZED");
                            boolean completes = sql.contains("done AS (");
                            int kind = claims ? (completes ? 4 : 0) : completes ? 2 : -1;
                            if (kind >= 0) {
                                counts[kind] += row.get(1, Long.class);
                                counts[kind + 1] += row.get(2, Long.class);
                            }
                            return 0;
                        }))
                        .blockLast();
            }
            Flux.fromIterable(connections).concatMap(Connection::close).blockLast();
        } catch (RuntimeException e) {
            System.err.println("could not read pg_prepared_statements: " + e);
        }
        return new Plans(counts[0], counts[1], counts[2], counts[3], counts[4], counts[5]);
    }

    private static List<String> keys(List<Item<String>> items) {
        List<String> keys = new ArrayList<>(items.size());
        for (Item<String> item : items) {
            keys.add(item.key());
        }
        return keys;
    }
}
