package io.workqueue.examples.bench;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.spi.Connection;
import io.workqueue.Horizon;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkQueueMeters;
import io.workqueue.WorkerOptions;
import java.awt.Color;
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
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * The pressure suite of the vacuum-proof storage issue: a producer at a fixed offered rate,
 * credited on wall-clock time, {@code process()} workers with no-op handlers, and phases in which
 * something holds the MVCC horizon. Per 5 s window it records offered and completed rates, the
 * backlog, pickup latency (enqueue submitted to handler started), the table's dead tuples and the
 * horizon's age, and the survivors' looks behind their claim cursors (how many, how long); at the
 * end of each phase an {@code EXPLAIN (ANALYZE, BUFFERS)}, rolled back, of the claim from the head of
 * the index (what an instance claims with before its first look, or with more than 32 bands), of the
 * claim from a cursor (what claims are otherwise) and of the look (what a look costs there: looks are
 * spaced twenty times that) shows what each costs at that point.
 *
 * <p>Phases, in the order {@code --phases NAME:SECONDS,...} gives (names may repeat): {@code clean}; {@code pinned} (another
 * session {@code BEGIN; SELECT txid_current();} and idle); {@code readers} (four
 * {@code REPEATABLE READ} transactions, each holding its snapshot for 20 s, started 5 s apart, so
 * the horizon is never free); {@code overload} (nothing held, the producer offers
 * {@code --overload-rate}, by default three times {@code --rate}: set it to 1.5 times the drain
 * ceiling {@code run.sh} measures to overload the fleet); {@code recovery} (nothing held);
 * {@code crash} (nothing held; as it starts, a fleet member, a queue instance of its own, claims up
 * to {@code --rate} items with a 5 s lease and dies holding them: see {@link FleetCrash});
 * {@code crash-pinned} (the same crash while the horizon is held: by the {@code pinned} phase just
 * before, whose transaction it keeps open, so {@code pinned:300,crash-pinned:60} crashes five
 * minutes into a pin; or, after any other phase, by a transaction it opens). Run it through
 * {@code benchmarks/pressure.sh}, which gives it a cluster of its own with autovacuum on:
 * numbers about vacuum taken on a server with autovacuum off describe nothing real.
 */
public final class Pressure {
    private static final Duration WINDOW = Duration.ofSeconds(5);
    private static final String PREFIX = "pressure";
    private static final String QUEUE = "pressure";

    private static final List<String> PHASES =
            List.of("clean", "pinned", "readers", "overload", "recovery", "crash", "crash-pinned");
    /** The crashing fleet member's lease. */
    private static final Duration MEMBER_LEASE = Duration.ofSeconds(5);

    private record Phase(String name, int seconds) {
        boolean holdsHorizon() {
            return name.equals("pinned") || name.equals("crash-pinned");
        }
    }

    /**
     * One 5 s window of measurements; the looks are the survivors' (how many ended, their mean
     * duration, how many bands they found something due behind a cursor in).
     */
    private record Window(double atSeconds, String phase, double offered, double completed, long backlog,
            double pickupP50, double pickupP99, long deadTuples, double horizonSeconds, long looks, double lookMeanMs,
            long lookFound, String load) {}

    /** One statement's plan, run and rolled back: the top node's buffers and the execution time. */
    private record Explained(String buffers, String executionTime) {
        @Override
        public String toString() {
            return buffers + "; " + executionTime;
        }
    }

    /** The plans at the end of a phase: the claim from the head, the claim from a cursor, the look. */
    private record PhasePlans(String phase, Explained head, Explained cursor, Explained look) {}

    private final Db db;
    private final int rate;
    /** The offered rate during an {@code overload} phase. */
    private final int overloadRate;
    private final int workers;
    private final int batch;
    private final List<Phase> phases;
    private final Path out;

    private final Map<String, Long> submittedAt = new ConcurrentHashMap<>();
    private final AtomicLong sent = new AtomicLong();
    private final AtomicLong completed = new AtomicLong();
    private final ConcurrentLinkedQueue<Double> pickups = new ConcurrentLinkedQueue<>();
    /** The crash being watched, if any. */
    private volatile FleetCrash crash;
    private volatile String phase = "setup";
    /** The rate the producer offers now: {@link #rate}, or {@link #overloadRate} in an overload phase. */
    private volatile int offering;

    private Pressure(Db db, int rate, int overloadRate, int workers, int batch, List<Phase> phases, Path out) {
        this.db = db;
        this.rate = rate;
        this.overloadRate = overloadRate;
        this.offering = rate;
        this.workers = workers;
        this.batch = batch;
        this.phases = phases;
        this.out = out;
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> options = new LinkedHashMap<>(Map.of("rate", "5000", "overload-rate", "0", "workers", "4",
                "batch", "100", "phases", "clean:60,pinned:180,recovery:90,readers:60,recovery:90",
                "out", "docs/benchmarks/pressure"));
        for (int i = 0; i < args.length; i++) {
            if (!args[i].startsWith("--") || i + 1 >= args.length || !options.containsKey(args[i].substring(2))) {
                throw new IllegalArgumentException("usage: Pressure [--rate N] [--overload-rate N] [--workers N]"
                        + " [--batch N] [--phases NAME:SECONDS,...] [--out DIR]; phases are "
                        + String.join(", ", PHASES) + "; got " + args[i]);
            }
            options.put(args[i].substring(2), args[++i]);
        }
        List<Phase> phases = new ArrayList<>();
        for (String spec : options.get("phases").split(",")) {
            String[] parts = spec.split(":");
            if (parts.length != 2 || !PHASES.contains(parts[0])) {
                throw new IllegalArgumentException("a phase is NAME:SECONDS with NAME one of "
                        + String.join(", ", PHASES) + "; got " + spec);
            }
            phases.add(new Phase(parts[0], Integer.parseInt(parts[1])));
        }
        Path repo = Path.of(System.getProperty("bench.repo", "."));
        int status = 1;
        try {
            int rate = Integer.parseInt(options.get("rate"));
            int overload = Integer.parseInt(options.get("overload-rate"));
            new Pressure(Db.fromEnvironment("bench"), rate, overload > 0 ? overload : 3 * rate,
                    Integer.parseInt(options.get("workers")), Integer.parseInt(options.get("batch")), phases,
                    repo.resolve(options.get("out"))).run();
            status = 0;
        } finally {
            // The pool's and the driver's threads are not daemons: a failed run must not linger and
            // keep producing into the next run's table.
            System.exit(status);
        }
    }

    private void run() throws IOException, InterruptedException {
        String autovacuum = db.queryString("SHOW autovacuum");
        if (!"on".equals(autovacuum)) {
            System.err.println("WARNING: autovacuum is " + autovacuum + " on this server; vacuum numbers will not be"
                    + " representative (benchmarks/pressure.sh sets up a cluster with the defaults)");
        }
        db.dropQueueTables();
        db.migrate(PREFIX);
        String table = PREFIX + "_work_queue_items";
        ConnectionPool pool = db.pool("pressure", workers * 2 + 4);
        WorkQueueConfig config = WorkQueueConfig.builder(QUEUE).tablePrefix(PREFIX).maxClaimBatch(batch).build();
        // Only to read the looks' meters: counters and timers, nothing that queries the database.
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(pool, String.class).config(config)
                .meterRegistry(meters).build();
        Timer looks = meters.get(WorkQueueMeters.CLAIM_LOOK).timer();
        Counter lookFound = meters.get(WorkQueueMeters.CLAIM_LOOK_FOUND).counter();

        List<Disposable> running = new ArrayList<>();
        for (int w = 0; w < workers; w++) {
            running.add(queue.process(item -> Mono.fromRunnable(() -> picked(item)),
                            WorkerOptions.builder().concurrency(batch).claimBatch(batch)
                                    .lease(Duration.ofSeconds(60)).poll(Duration.ofMillis(50)).build())
                    .subscribe(item -> completed.incrementAndGet(),
                            e -> System.err.println("worker ended: " + e)));
        }
        Scheduler ticks = Schedulers.newSingle("pressure-producer");
        long start = System.nanoTime();
        // Credited on wall-clock time at the rate offered at each moment: {credited items, last tick}.
        double[] credit = {0, start};
        running.add(Flux.interval(Duration.ofMillis(10), ticks).onBackpressureDrop().subscribe(tick -> {
            long tickAt = System.nanoTime();
            credit[0] += offering * (tickAt - credit[1]) / 1e9;
            credit[1] = tickAt;
            long target = (long) credit[0];
            int n = (int) Math.min(target - sent.get(), 50_000);
            if (n <= 0) {
                return;
            }
            List<String> keys = new ArrayList<>(n);
            long now = System.nanoTime();
            for (int i = 0; i < n; i++) {
                String key = "k" + sent.incrementAndGet();
                submittedAt.put(key, now);
                keys.add(key);
            }
            queue.enqueueKeys(keys).subscribe(null, e -> System.err.println("enqueue failed: " + e));
        }));

        List<Window> windows = new ArrayList<>();
        List<PhasePlans> plans = new ArrayList<>();
        List<FleetCrash.Result> crashes = new ArrayList<>();
        Connection holder = null;
        List<Connection> readers = new ArrayList<>();
        long lastSent = 0;
        long lastCompleted = 0;
        long lastLooks = 0;
        double lastLookNanos = 0;
        double lastLookFound = 0;
        long windowStart = System.nanoTime();
        for (int index = 0; index < phases.size(); index++) {
            Phase p = phases.get(index);
            String label = (index + 1) + " " + p.name();
            phase = label;
            System.err.printf(Locale.ROOT, "phase %s for %d s%n", p.name(), p.seconds());
            if (p.holdsHorizon() && holder == null) {
                holder = openTransaction("BEGIN", "SELECT txid_current()");
            }
            if (p.name().startsWith("crash")) {
                // Its items are timed by the crash from their lease end, not as pickups from enqueue.
                FleetCrash starting = new FleetCrash(label, db, config, table, rate, batch, MEMBER_LEASE,
                        submittedAt::remove);
                crash = starting;
                starting.start();
            }
            offering = p.name().equals("overload") ? overloadRate : rate;
            long phaseEnd = System.nanoTime() + Duration.ofSeconds(p.seconds()).toNanos();
            long nextReader = System.nanoTime();
            while (System.nanoTime() < phaseEnd) {
                if (p.name().equals("readers")) {
                    // Each reader holds its snapshot for 20 s; a new one starts every 5 s, four at most.
                    if (System.nanoTime() >= nextReader) {
                        if (readers.size() == 4) {
                            close(readers.remove(0));
                        }
                        readers.add(openTransaction("BEGIN ISOLATION LEVEL REPEATABLE READ",
                                "SELECT count(*) FROM " + table));
                        nextReader = System.nanoTime() + WINDOW.toNanos();
                    }
                }
                Db.sleep(Math.max(1, Math.min(WINDOW.toMillis(), (phaseEnd - System.nanoTime()) / 1_000_000)));
                if (System.nanoTime() - windowStart >= WINDOW.toNanos() || System.nanoTime() >= phaseEnd) {
                    long now = System.nanoTime();
                    double seconds = (now - windowStart) / 1e9;
                    long s = sent.get();
                    long c = completed.get();
                    List<Double> latencies = drainPickups();
                    Horizon horizon = queue.horizon().block(Duration.ofSeconds(30));
                    long lookCount = looks.count();
                    double lookNanos = looks.totalTime(TimeUnit.NANOSECONDS);
                    double found = lookFound.count();
                    Window window = new Window((now - start) / 1e9, label, (s - lastSent) / seconds,
                            (c - lastCompleted) / seconds, s - c, Percentiles.of(latencies, 50),
                            Percentiles.of(latencies, 99), deadTuples(table),
                            horizon.oldestTransactionAge().toMillis() / 1e3, lookCount - lastLooks,
                            lookCount == lastLooks ? Double.NaN
                                    : (lookNanos - lastLookNanos) / (lookCount - lastLooks) / 1e6,
                            Math.round(found - lastLookFound), Machine.loadAverage().split(" ")[0]);
                    windows.add(window);
                    System.err.printf(Locale.ROOT, "%7.1f s %-14s offered %7.0f/s completed %7.0f/s backlog %8d"
                                    + " pickup p50 %7.1f ms p99 %8.1f ms dead %8d horizon %6.1f s looks %3d mean %7.1f ms"
                                    + " found %2d load %s%n",
                            window.atSeconds(), window.phase(), window.offered(), window.completed(), window.backlog(),
                            window.pickupP50(), window.pickupP99(), window.deadTuples(), window.horizonSeconds(),
                            window.looks(), window.lookMeanMs(), window.lookFound(), window.load());
                    lastSent = s;
                    lastCompleted = c;
                    lastLooks = lookCount;
                    lastLookNanos = lookNanos;
                    lastLookFound = found;
                    windowStart = now;
                }
            }
            FleetCrash ended = crash;
            if (ended != null) {
                crash = null;
                FleetCrash.Result result = ended.result();
                crashes.add(result);
                System.err.printf(Locale.ROOT, "crash in %s: %d held, %d back (%d flagged reclaimed); after lease end"
                                + " p50 %.0f ms p99 %.0f ms max %.0f ms; at most %d newer items ahead of one%n",
                        label, result.held(), result.back(), result.backFlaggedReclaimed(), result.p50Ms(),
                        result.p99Ms(), result.maxMs(), result.newerAheadMost());
            }
            plans.add(explainPhaseEnd(label));
            // A crash-pinned phase crashes under the pin of the pinned phase before it, same transaction.
            boolean pinGoesOn = index + 1 < phases.size() && phases.get(index + 1).name().equals("crash-pinned");
            if (holder != null && !pinGoesOn) {
                close(holder);
                holder = null;
            }
            readers.forEach(Pressure::close);
            readers.clear();
        }
        running.forEach(Disposable::dispose);
        ticks.dispose();
        queue.close().block(Duration.ofSeconds(30));
        pool.disposeLater().block();
        write(windows, plans, crashes);
    }

    private void picked(Item<String> item) {
        FleetCrash c = crash;
        if (c != null) {
            c.handedOut(item);
        }
        Long at = submittedAt.remove(item.key());
        if (at != null) {
            pickups.add((System.nanoTime() - at) / 1e6);
        }
    }

    private List<Double> drainPickups() {
        List<Double> latencies = new ArrayList<>();
        for (Double d; (d = pickups.poll()) != null; ) {
            latencies.add(d);
        }
        return latencies;
    }

    private long deadTuples(String table) {
        return db.queryLong("SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = '" + table + "'");
    }

    /** A session of its own with a transaction opened and left open. */
    private Connection openTransaction(String begin, String first) {
        Connection connection = Mono.from(db.factory("pressure-holder").create()).block();
        Flux.from(connection.createStatement(begin).execute()).concatMap(r -> r.getRowsUpdated()).blockLast();
        Flux.from(connection.createStatement(first).execute()).concatMap(r -> r.map((row, meta) -> 1)).blockLast();
        return connection;
    }

    private static void close(Connection connection) {
        Mono.from(connection.close()).onErrorResume(e -> Mono.empty()).block();
    }

    /**
     * Each statement planned and run, then rolled back (nothing is leased): one claim of
     * {@code batch} items from the head of the index (exact claim order; what an instance claims with
     * before its first look ends, or with more than 32 bands); the claim most claims are, reading
     * band 0 from a cursor where the queue keeps it once the band is drained (the statement's now()
     * less the cursor slack); and the look, which walks each band from its head to its first due item.
     */
    private PhasePlans explainPhaseEnd(String phaseName) {
        LibrarySql sql = LibrarySql.forPrefix(PREFIX);
        // The last parameter, timed, is false: what a queue without timing meters runs.
        Explained head = explain(sql.claimDue.replace("$5", "false"), "the claim from the head", phaseName, false);
        Explained cursor = explain(sql.claimFromCursors
                .replace("$8", "false")
                .replace("$7", "ARRAY['']")
                .replace("$5", "'{0}'")
                .replace("$6", "ARRAY[(EXTRACT(EPOCH FROM now()) * 1000000)::bigint - 500000]"), "the cursor claim",
                phaseName, false);
        Explained look = explain(sql.lookBehindCursors, "the look", phaseName, true);
        return new PhasePlans(phaseName, head, cursor, look);
    }

    /**
     * The top node's buffers and the execution time of one statement, rolled back; for a read-only
     * statement ({@code plainToo}), also the time of running it once more, plainly, in the same
     * transaction, from sending it to its last row: EXPLAIN ANALYZE's own instrumentation and the
     * fresh session are not what a look pays.
     */
    private Explained explain(String statement, String what, String phaseName, boolean plainToo) {
        // The driver binds every $n it sees, so the parameters go in as literals (a custom plan,
        // as the first executions of the library's prepared statements get too). The look takes
        // only $1 and $2.
        String claim = statement.replace("$1", "'" + QUEUE + "'").replace("$2", "0").replace("$3", String.valueOf(batch))
                .replace("$4", "60000000");
        long[] plainNanos = {-1};
        List<String> plan = Mono.usingWhen(Mono.from(db.factory("pressure-explain").create()), c ->
                        Flux.from(c.createStatement("BEGIN").execute()).concatMap(r -> r.getRowsUpdated())
                                .thenMany(Flux.from(c.createStatement("EXPLAIN (ANALYZE, BUFFERS) " + claim).execute()))
                                .concatMap(r -> r.map((row, meta) -> row.get(0, String.class)))
                                .collectList()
                                .flatMap(lines -> !plainToo ? Mono.just(lines) : Mono.defer(() -> {
                                    long began = System.nanoTime();
                                    return Flux.from(c.createStatement(claim).execute())
                                            .concatMap(r -> r.map((row, meta) -> 1)).then()
                                            .doOnSuccess(done -> plainNanos[0] = System.nanoTime() - began)
                                            .thenReturn(lines);
                                }))
                                .flatMap(lines -> Flux.from(c.createStatement("ROLLBACK").execute())
                                        .concatMap(r -> r.getRowsUpdated()).then(Mono.just(lines))),
                        Connection::close)
                .block(Duration.ofMinutes(5));
        String buffers = plan.stream().filter(l -> l.contains("Buffers:")).findFirst().orElse("?").trim();
        String time = plan.stream().filter(l -> l.startsWith("Execution Time")).findFirst().orElse("?").trim();
        if (plainNanos[0] >= 0) {
            time += String.format(Locale.ROOT, "; run plainly %.1f ms", plainNanos[0] / 1e6);
        }
        System.err.println(what + " at the end of " + phaseName + ": " + buffers + "; " + time);
        System.err.println("  " + String.join("\n  ", plan));
        return new Explained(buffers, time);
    }

    private void write(List<Window> windows, List<PhasePlans> plans, List<FleetCrash.Result> crashes)
            throws IOException {
        Files.createDirectories(out);
        StringBuilder csv = new StringBuilder("at_s,phase,offered_per_s,completed_per_s,backlog,pickup_p50_ms,"
                + "pickup_p99_ms,dead_tuples,horizon_s,looks,look_mean_ms,look_found_bands,load1\n");
        for (Window w : windows) {
            csv.append(String.format(Locale.ROOT, "%.1f,%s,%.0f,%.0f,%d,%.1f,%.1f,%d,%.1f,%d,%.1f,%d,%s%n", w.atSeconds(),
                    w.phase(), w.offered(), w.completed(), w.backlog(), w.pickupP50(), w.pickupP99(), w.deadTuples(),
                    w.horizonSeconds(), w.looks(), w.lookMeanMs(), w.lookFound(), w.load()));
        }
        Files.writeString(out.resolve("pressure.csv"), csv);

        LibrarySql library = LibrarySql.forPrefix(PREFIX);
        Map<String, List<Window>> byPhase = windows.stream()
                .collect(Collectors.groupingBy(Window::phase, LinkedHashMap::new, Collectors.toList()));
        List<Window> clean = byPhase.entrySet().stream().filter(e -> e.getKey().endsWith(" clean"))
                .findFirst().map(Map.Entry::getValue).orElse(List.of());
        double cleanRate = mean(clean, Window::completed);
        double cleanP99 = Percentiles.median(clean.stream().map(Window::pickupP99).toList());
        StringBuilder md = new StringBuilder();
        md.append("# Pressure: draining while something holds the MVCC horizon\n\n")
                .append("Generated by `")
                .append(Db.driverOptions().isEmpty() ? "" : "BENCH_R2DBC_OPTIONS=" + Db.driverOptions() + " ")
                .append("benchmarks/pressure.sh")
                .append(String.format(Locale.ROOT, " --rate %d --overload-rate %d --workers %d --batch %d", rate,
                        overloadRate, workers, batch));
        md.append(" --phases ").append(phases.stream().map(p -> p.name() + ":" + p.seconds())
                .collect(Collectors.joining(",")));
        md.append("` on ").append(Instant.now()).append(", against a dedicated PostgreSQL cluster with autovacuum ")
                .append(db.queryString("SHOW autovacuum")).append(" (server ")
                .append(db.queryString("SHOW server_version")).append(", load average at the end ")
                .append(Machine.loadAverage()).append("; per window in `pressure.csv`).\n\n")
                .append("| phase | windows | completed/s (mean) | ÷ offered | ÷ clean | last window completed/s |"
                        + " last backlog | pickup p99 (median of windows) | ÷ clean | dead tuples at end |"
                        + " looks (mean, latest window's mean) | next look at end of phase ≥ | look at end of phase |"
                        + " claim from the head at end of phase | cursor claim at end of phase |\n")
                .append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        for (Map.Entry<String, List<Window>> entry : byPhase.entrySet()) {
            List<Window> ws = entry.getValue();
            Window last = ws.get(ws.size() - 1);
            double completedRate = mean(ws, Window::completed);
            double offeredRate = mean(ws, Window::offered);
            double p99 = Percentiles.median(ws.stream().map(Window::pickupP99).toList());
            long lookCount = ws.stream().mapToLong(Window::looks).sum();
            double lookMean = ws.stream().filter(w -> w.looks() > 0).mapToDouble(w -> w.lookMeanMs() * w.looks()).sum()
                    / lookCount;
            // The latest looks' mean (a window under a long pin may see none), and the spacing the
            // library gives the next look after one that long.
            double latestLook = ws.stream().filter(w -> w.looks() > 0).reduce((a, b) -> b).map(Window::lookMeanMs)
                    .orElse(Double.NaN);
            double spacing = Math.max(library.lookMinInterval.toNanos() / 1e6, library.lookCostFactor * latestLook);
            PhasePlans plan = plans.stream().filter(pl -> pl.phase().equals(entry.getKey())).findFirst().orElse(null);
            md.append(String.format(Locale.ROOT, "| %s | %d | %.0f | %.2f | %.2f | %.0f | %d | %.0f ms | %.2f | %d |"
                            + " %d (%.1f ms, %.1f ms) | %s | %s | %s | %s |%n",
                    entry.getKey(), ws.size(), completedRate, completedRate / offeredRate, completedRate / cleanRate,
                    last.completed(), last.backlog(), p99, p99 / cleanP99, last.deadTuples(), lookCount, lookMean,
                    latestLook, Double.isNaN(spacing) ? "" : String.format(Locale.ROOT, "%.0f ms", spacing),
                    plan == null ? "" : plan.look(), plan == null ? "" : plan.head(), plan == null ? "" : plan.cursor()));
        }
        md.append("\nPer-window numbers: `pressure.csv`; chart: `pressure.png`. Ratios are against the clean phase of"
                + " the same run. Looks are the survivors' (the `workqueue.claim.look` timer, the statement's own run);"
                + " the next one waits at least " + library.lookMinInterval.toMillis() + " ms and "
                + library.lookCostFactor + " times the last one's duration. The plans are `EXPLAIN (ANALYZE,"
                + " BUFFERS)` of the library's statements on a fresh session, rolled back: the look"
                + " (`lookBehindCursors`; its buffers are what a look reads there; \"run plainly\" is the same"
                + " statement run once more in that transaction, timed from sending it to its answer, as the"
                + " library times a look), the claim from the head (`claimDue`, what an"
                + " instance claims with before its first look or with more than 32 bands) and the claim of band 0"
                + " from a cursor (`claimFromCursors`).\n");
        if (!crashes.isEmpty()) {
            md.append("\n## A fleet member dies holding leases\n\n")
                    .append("As each crash phase starts, a fleet member (a queue instance of its own over the same queue,"
                            + " on its own pool) claims up to " + rate + " items, " + batch + " a claim, for at most "
                            + FleetCrash.CLAIMING.toSeconds() + " s, with a " + MEMBER_LEASE.toSeconds() + " s lease,"
                            + " then dies holding them: no complete, no release, its sessions close. \"Back\" is an"
                            + " item's next hand-out by one of the " + workers + " surviving workers (its handler"
                            + " starting), timed from the member's lease end read from the table. \"Newer items ahead\""
                            + " is the most items enqueued after one of the member's items that the survivors handed"
                            + " out while it was due again and not yet back. The member's items are left out of the"
                            + " pickup columns above.\n\n")
                    .append("| phase | held | claimed in | back by phase end | flagged reclaimed | after lease end p50 |"
                            + " p99 | max | newer items ahead (most for one item) |\n")
                    .append("|---|---|---|---|---|---|---|---|---|\n");
            for (FleetCrash.Result r : crashes) {
                md.append(String.format(Locale.ROOT, "| %s | %d | %.1f s | %d | %d | %.0f ms | %.0f ms | %.0f ms | %d |%n",
                        r.phase(), r.held(), r.claimingSeconds(), r.back(), r.backFlaggedReclaimed(), r.p50Ms(),
                        r.p99Ms(), r.maxMs(), r.newerAheadMost()));
            }
            int estimated = crashes.stream().mapToInt(FleetCrash.Result::leaseEndsEstimated).sum();
            if (estimated > 0) {
                md.append("\n").append(estimated).append(" lease ends were estimated (claim returned + lease): a"
                        + " survivor had the item before the member's leases were read back.\n");
            }
        }
        Files.writeString(out.resolve("README.md"), md);

        Map<String, List<double[]>> series = new LinkedHashMap<>();
        series.put("completed/s", windows.stream().map(w -> new double[] {w.atSeconds(), w.completed()}).toList());
        series.put("offered/s", windows.stream().map(w -> new double[] {w.atSeconds(), w.offered()}).toList());
        List<Charts.Marker> markers = new ArrayList<>();
        markers.add(new Charts.Marker(rate, "offered rate", Color.GRAY));
        Charts.lines(out.resolve("pressure.png"), "Completed items per second while the horizon is held (phases: "
                        + phases.stream().map(Phase::name).collect(Collectors.joining(", ")) + ")",
                "seconds", "items/s", series, false, false, markers, 1000, 500);
        System.err.println("wrote " + out.resolve("README.md"));
    }

    private static double mean(List<Window> windows, java.util.function.ToDoubleFunction<Window> field) {
        return windows.stream().mapToDouble(field).average().orElse(Double.NaN);
    }
}
