package io.workqueue.examples.bench;

import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.pool.ConnectionPoolConfiguration;
import io.r2dbc.spi.ConnectionFactories;
import io.r2dbc.spi.ConnectionFactoryOptions;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkerOptions;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.IntStream;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The same enqueue and drain, straight to PostgreSQL and through PgBouncer in transaction pooling
 * mode, in one run: what the pooler costs. Three paths: direct with the driver's statement cache
 * (the default everywhere else), direct without it ({@code preparedStatementCacheQueries=0}, what
 * the pooler needs, so the two costs can be told apart), and through the pooler without it. Rounds
 * alternate the paths; each number is the median of the rounds. Run it through
 * {@code benchmarks/pooler.sh}, which starts the pooler.
 */
public final class Pooler {
    private static final String PREFIX = "pooler";
    private static final String NO_CACHE = "preparedStatementCacheQueries=0";

    /** One way to reach the database: a name for the table, and the R2DBC URL. */
    private record Route(String name, String url) {}

    public static void main(String[] args) {
        Bench.exitAfter(args, Pooler::run);
    }

    private static void run(String[] args) throws IOException {
        int keys = 100_000;
        int callers = 1_000;
        int rounds = 3;
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--keys" -> keys = Integer.parseInt(args[i + 1]);
                case "--rounds" -> rounds = Integer.parseInt(args[i + 1]);
                default -> throw new IllegalArgumentException("usage: Pooler [--keys N] [--rounds N]; got " + args[i]);
            }
        }
        Db db = Db.fromEnvironment("bench");
        String pooler = System.getenv().getOrDefault("PGBOUNCER_PORT", "6432");
        List<Route> paths = List.of(
                new Route("direct, statement cache on", db.baseUrl()),
                new Route("direct, statement cache off", db.baseUrl() + "?" + NO_CACHE),
                new Route("PgBouncer (transaction mode), cache off",
                        "r2dbc:postgresql://" + db.user + "@127.0.0.1:" + pooler + "/bench?" + NO_CACHE));
        db.dropQueueTables();
        db.migrate(PREFIX);

        Map<String, List<Double>> enqueue = new LinkedHashMap<>();
        Map<String, List<Double>> drain = new LinkedHashMap<>();
        for (int round = 0; round < rounds; round++) {
            for (Route path : paths) {
                // Every path starts from an empty table: what one run leaves behind (completed rows,
                // dead row versions) would otherwise slow the next, or speed it up once pruned.
                db.exec("TRUNCATE " + PREFIX + "_work_queue_items");
                ConnectionPool pool = new ConnectionPool(ConnectionPoolConfiguration.builder(
                                ConnectionFactories.get(ConnectionFactoryOptions.parse(path.url())))
                        .initialSize(8).maxSize(8).maxAcquireTime(Duration.ofSeconds(60)).build());
                pool.warmup().block();
                try {
                    String queueName = "q" + round + "-" + paths.indexOf(path);
                    ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(pool, String.class)
                            .config(WorkQueueConfig.builder(queueName).tablePrefix(PREFIX).build())
                            .build();
                    List<String> names = IntStream.range(0, keys).mapToObj(i -> "k" + i).toList();
                    long start = System.nanoTime();
                    Flux.fromIterable(names).flatMap(queue::enqueueKeys, callers).blockLast();
                    double enqueueRate = keys / ((System.nanoTime() - start) / 1e9);
                    enqueue.computeIfAbsent(path.name(), k -> new ArrayList<>()).add(enqueueRate);
                    // What autovacuum's analyze would have done by now on a server that runs it (the
                    // machine's main one does not): a statement prepared once and reused gets a
                    // generic plan, and on a table with no statistics that plan is a poor one.
                    db.exec("ANALYZE " + PREFIX + "_work_queue_items");

                    start = System.nanoTime();
                    int total = keys;
                    Flux.range(0, 4)
                            .flatMap(w -> queue.process(item -> Mono.empty(), WorkerOptions.builder()
                                    .concurrency(100).claimBatch(100).poll(Duration.ofMillis(50)).build()))
                            .take(total)
                            .blockLast();
                    double drainRate = keys / ((System.nanoTime() - start) / 1e9);
                    drain.computeIfAbsent(path.name(), k -> new ArrayList<>()).add(drainRate);
                    System.err.printf(Locale.ROOT, "round %d %-42s enqueue %8.0f keys/s  drain %8.0f items/s%n",
                            round + 1, path.name(), enqueueRate, drainRate);
                    queue.close().block();
                } finally {
                    pool.disposeLater().block();
                }
            }
        }

        StringBuilder md = new StringBuilder("# The queue through PgBouncer, next to direct\n\n")
                .append(String.format(Locale.ROOT, "Generated by `benchmarks/pooler.sh --keys %d --rounds %d` on %s"
                                + " (load average %s). Per path and round: %,d keys enqueued by %,d concurrent single-key"
                                + " callers (group commit), then drained by 4 `process()` workers (batch 100, no-op"
                                + " handlers), 8-connection r2dbc pool. Medians of the rounds; ratios against direct"
                                + " with the statement cache on, same run.%n%n",
                        keys, rounds, Instant.now(), Machine.loadAverage(), keys, callers))
                .append("| path | enqueue keys/s | ÷ direct | drain items/s | ÷ direct |\n|---|---|---|---|---|\n");
        String baseline = paths.get(0).name();
        double baseEnqueue = Percentiles.median(enqueue.get(baseline));
        double baseDrain = Percentiles.median(drain.get(baseline));
        for (Route path : paths) {
            double e = Percentiles.median(enqueue.get(path.name()));
            double d = Percentiles.median(drain.get(path.name()));
            md.append(String.format(Locale.ROOT, "| %s | %.0f | %.2f | %.0f | %.2f |%n", path.name(), e, e / baseEnqueue,
                    d, d / baseDrain));
        }
        Path out = Path.of(System.getProperty("bench.repo", ".")).resolve("docs/benchmarks/pooler");
        Files.createDirectories(out);
        Files.writeString(out.resolve("README.md"), md);
        System.err.println(md);
    }
}
