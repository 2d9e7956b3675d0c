package io.workqueue.examples.tiles;

import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.spi.Connection;
import io.workqueue.Entry;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.Stats;
import io.workqueue.WorkQueueConfig;
import io.workqueue.examples.support.DemoDatabase;
import io.workqueue.migrations.WorkQueueMigrations;
import io.workqueue.notify.PgNotificationListener;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import reactor.core.Disposable;
import reactor.core.Disposables;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.util.retry.Retry;

/**
 * A fleet of tile renderers draining one queue: the scenario the library was designed for.
 *
 * <p>A producer enqueues a grid of map tiles (roads urgent, labels held back a little); several
 * workers consume {@code claimStream}, "render" each tile, and complete it in batches. Rendering
 * sometimes fails (the tile is released with a back-off and the error recorded) and sometimes the
 * worker "crashes" (the lease is simply abandoned, lapses on the database clock, and another worker
 * reclaims the tile, flagged). At the end it checks the invariant: every tile rendered at least
 * once, none lost. It works on tables of its own, which it drops at the end, pass or fail.
 *
 * <p>Run it with {@code --smoke} for a small, fast fleet (what CI runs).
 */
public final class TileFleet {
    /** A key is whatever names the work: the default codec stores it as sorted JSON. */
    public record TileKey(String layer, int x, int y) {}

    private static final Duration LEASE = Duration.ofSeconds(2);
    private static final Duration POLL = Duration.ofSeconds(1);
    private static final double FAILURE_RATE = 0.03;
    private static final double CRASH_RATE = 0.003;

    private final Set<TileKey> rendered = ConcurrentHashMap.newKeySet();
    private final AtomicLong renders = new AtomicLong();
    private final AtomicLong failures = new AtomicLong();
    private final AtomicLong crashes = new AtomicLong();
    private final AtomicLong reclaimed = new AtomicLong();

    public static void main(String[] args) throws Exception {
        boolean smoke = List.of(args).contains("--smoke");
        int side = smoke ? 12 : 40;
        int workers = 4;
        boolean passed;
        try (DemoDatabase database = DemoDatabase.start()) {
            System.out.println("Tile fleet: using " + database.description());
            passed = new TileFleet().run(database, side, workers);
        }
        if (!passed) {
            System.exit(1);
        }
    }

    private boolean run(DemoDatabase database, int side, int workerCount) {
        ConnectionPool pool = database.pool(8);
        // Tables of this run's own, dropped at the end: the demo leaves nothing behind in your database.
        String runId = Long.toHexString(System.nanoTime());
        WorkQueueConfig config = WorkQueueConfig.builder("tiles")
                .tablePrefix("tiles_demo_" + runId)
                .notifyChannel("tiles_demo_work_" + runId)
                .build();
        try {
            // The table comes from the same config the queue uses: the prefix is stated once.
            WorkQueueMigrations.apply(pool, config).block(Duration.ofSeconds(30));
            return render(database, pool, config, side, workerCount);
        } finally {
            dropTables(pool, config.tablePrefix());
            pool.dispose();
        }
    }

    private boolean render(DemoDatabase database, ConnectionPool pool, WorkQueueConfig config, int side,
            int workerCount) {
        PgNotificationListener listener = PgNotificationListener.builder(database.plainFactory())
                .channel(config.notifyChannel())
                .build();
        ReactiveWorkQueue<TileKey> queue = ReactiveWorkQueue.builder(pool, TileKey.class)
                .config(config)
                .wakeups(listener.wakeups())
                .build();

        List<Entry<TileKey>> tiles = grid(side);
        long start = System.nanoTime();
        Disposable.Composite fleet = Disposables.composite();
        try {
            for (int w = 0; w < workerCount; w++) {
                fleet.add(worker(queue).subscribe());
            }
            // Producers enqueue concurrently, one row at a time: the group commit merges them.
            Flux.fromIterable(tiles)
                    .flatMap(queue::enqueue, 256)
                    .then()
                    .block(Duration.ofMinutes(1));

            Stats last = Flux.interval(Duration.ofMillis(250))
                    .concatMap(tick -> queue.stats())
                    .doOnNext(stats -> System.out.print("\r" + progress(stats, tiles.size())))
                    .filter(stats -> stats.pending() == 0)
                    .blockFirst(Duration.ofMinutes(5));
            double seconds = (System.nanoTime() - start) / 1e9;
            System.out.println("\r" + progress(last, tiles.size()));
            return summary(tiles, seconds);
        } finally {
            // Also when the run fails: no worker may still use the tables when they are dropped.
            fleet.dispose();
            queue.close().block(Duration.ofSeconds(10));
            listener.close().block(Duration.ofSeconds(10));
        }
    }

    /** Drops the tables {@link WorkQueueMigrations#apply} made for {@code prefix}: items, then queues. */
    private static void dropTables(ConnectionPool pool, String prefix) {
        String items = WorkQueueMigrations.tableName(prefix);
        String queues = prefix + "_work_queue_queues";
        Mono.usingWhen(pool.create(),
                        connection -> Mono.from(connection.createStatement("DROP TABLE IF EXISTS " + items + ", " + queues)
                                .execute()).flatMap(result -> Mono.from(result.getRowsUpdated())),
                        Connection::close)
                .block(Duration.ofSeconds(30));
        System.out.println("Dropped the demo's tables " + items + " and " + queues);
    }

    private static List<Entry<TileKey>> grid(int side) {
        List<Entry<TileKey>> tiles = new ArrayList<>();
        for (String layer : List.of("roads", "terrain", "labels")) {
            for (int x = 0; x < side; x++) {
                for (int y = 0; y < side; y++) {
                    Entry<TileKey> tile = Entry.of(new TileKey(layer, x, y));
                    tiles.add(switch (layer) {
                        case "roads" -> tile.withPriority(10);
                        case "labels" -> tile.withDelay(Duration.ofMillis(1_500));
                        default -> tile;
                    });
                }
            }
        }
        return tiles;
    }

    /**
     * One worker: leases only what it can work on (claimStream is paced by flatMap's demand),
     * renders up to 16 tiles at once, completes successes in batches and releases failures.
     */
    private Flux<Long> worker(ReactiveWorkQueue<TileKey> queue) {
        return queue.claimStream(LEASE, POLL)
                .flatMap(item -> render(queue, item), 16)
                .bufferTimeout(64, Duration.ofMillis(20), true) // fair: respects concatMap's demand
                .concatMap(queue::complete)
                // A failed complete (say, a dropped connection) ends this pipeline; what it held
                // lapses and comes back reclaimed. Restart it rather than lose a worker.
                .doOnError(e -> System.err.println("\nworker restarting after: " + e))
                .retryWhen(Retry.backoff(Long.MAX_VALUE, Duration.ofMillis(100)).maxBackoff(Duration.ofSeconds(2)));
    }

    /** Emits the tile's key when rendered; empty when it failed or the worker "crashed". */
    private Mono<TileKey> render(ReactiveWorkQueue<TileKey> queue, Item<TileKey> item) {
        if (item.reclaimed()) {
            reclaimed.incrementAndGet();
        }
        ThreadLocalRandom random = ThreadLocalRandom.current();
        double roll = random.nextDouble();
        Mono<Void> work = Mono.delay(Duration.ofMillis(random.nextInt(1, 4))).then();
        if (roll < CRASH_RATE) {
            crashes.incrementAndGet();
            return Mono.empty(); // the lease is abandoned; it lapses and the tile is reclaimed
        }
        if (roll < CRASH_RATE + FAILURE_RATE) {
            failures.incrementAndGet();
            Duration backoff = Duration.ofMillis(50L * item.attempts());
            return work.then(queue.release(backoff, new IllegalStateException("renderer out of memory"), item.key()))
                    .then(Mono.empty());
        }
        return work.then(Mono.fromCallable(() -> {
            renders.incrementAndGet();
            rendered.add(item.key());
            return item.key();
        }));
    }

    private String progress(Stats stats, int total) {
        return String.format(Locale.ROOT,
                "done %5d/%d | ready %5d | leased %4d | reclaimed %3d | failed %3d | oldest ready %5d ms   ",
                stats.completed(), total, stats.ready(), stats.leased(), reclaimed.get(), failures.get(),
                stats.oldestReadyAge().toMillis());
    }

    private boolean summary(List<Entry<TileKey>> tiles, double seconds) {
        long lost = tiles.stream().filter(t -> !rendered.contains(t.key())).count();
        long duplicates = renders.get() - rendered.size();
        // A crash renders nothing, so its reclaim is not a duplicate: a tile is rendered twice only
        // when a lease lapses while its render is still running.
        System.out.printf(Locale.ROOT, "%d tiles in %.2f s (%.0f tiles/s); %d renders, of which %d rendered a tile"
                        + " again; %d failures released and retried; %d crashes abandoned their lease, and %d leases"
                        + " that lapsed were reclaimed by another worker%n",
                tiles.size(), seconds, tiles.size() / seconds, renders.get(), duplicates, failures.get(),
                crashes.get(), reclaimed.get());
        boolean passed = lost == 0;
        System.out.println(passed
                ? "PASS: every tile rendered at least once, none lost"
                : "FAIL: " + lost + " tiles never rendered");
        return passed;
    }
}
