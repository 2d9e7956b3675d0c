package io.workqueue.examples.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.spi.Connection;
import io.r2dbc.spi.Statement;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.Stats;
import io.workqueue.WorkQueueConfig;
import io.workqueue.migrations.WorkQueueMigrations;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Issue 23, "reads bounded by the backlog": what {@code stats()} and the health check
 * {@code readyLongerThan(5 min)} cost beside a day of completed history, against the stats read
 * they replaced, on one table grown from a small history to a large one.
 *
 * <pre>
 * benchmarks/stats-history.sh            # 100,000 pending over 1,000,000 then 20,000,000 completed
 * benchmarks/stats-history.sh --quick    # 100,000 pending over 200,000 then 2,000,000 completed
 * </pre>
 *
 * <p>The table is the library's own ({@code WorkQueueMigrations.apply}, prefix
 * {@value #PREFIX}), so the indexes are the real ones. One queue holds the pending rows in three
 * priority bands (60/30/10 %): most ready, a tenth leased, some delayed, one in a thousand out of
 * attempts. The completed rows are spread over the last 24 hours (inside the default retention, so
 * nothing is reapable), built by {@code INSERT ... SELECT generate_series} in batches. Before each
 * size is measured the pending rows are given fresh times (ready for under a minute, so the health
 * check's answer is "no" throughout, the common case) and the table is VACUUM ANALYZEd, its index
 * cleanup forced, as autovacuum would have done, since the machine's server runs without it; then the library's look
 * behind the claim cursors runs once, as the first instance to claim would run it, and marks the
 * due index's entries of dead versions it passes, as a claimed queue's looks keep doing.
 *
 * <p>At each size, sequentially on one queue instance: rounds of {@code stats()} and
 * {@code readyLongerThan}, with the old stats read (every row of the queue, history included;
 * rebuilt from the library's own predicates) issued through R2DBC on the same pool every few
 * rounds, so machine noise falls on all three alike. Then {@code EXPLAIN (ANALYZE, BUFFERS)} of
 * each statement once, for the buffers it touched: a cost that does not depend on the machine.
 */
final class StatsHistory {
    static final String PREFIX = "statsbench";
    static final String QUEUE = "history";
    static final int MAX_ATTEMPTS = 5;
    static final Duration HEALTH_THRESHOLD = Duration.ofMinutes(5);
    /** Rows per INSERT while building the history. */
    static final int BUILD_BATCH = 1_000_000;
    /** The targets of the issue, at the large size. */
    static final double STATS_TARGET_MS = 50;
    static final double HEALTH_TARGET_MS = 10;
    static final double GROWTH_TARGET = 1.10;
    /** stats() calls timed at each size before the look behind the cursors, after as many warm-up calls. */
    static final int LOOK_CALLS = 30;
    static final int LOOK_WARMUP_CALLS = 5;

    /**
     * The read {@code stats()} made before the change, as it was written then (at 2bb7396), with
     * the library's current predicates rendered into it: %1$s table, %2$s due, %3$s stalled,
     * %4$s leased, %5$s completed.
     */
    static final String OLD_STATS = """
            SELECT
                count(*) FILTER (WHERE completed_at IS NULL) AS pending,
                count(*) FILTER (WHERE %2$s) AS ready,
                count(*) FILTER (WHERE %4$s) AS leased,
                count(*) FILTER (WHERE %3$s) AS stalled,
                count(*) FILTER (WHERE %5$s) AS completed,
                COALESCE(
                    (EXTRACT(EPOCH FROM now() - min(GREATEST(available_at, lease_until)) FILTER (WHERE %2$s))
                        * 1000000)::bigint,
                    0) AS oldest_ready_us
            FROM %1$s
            WHERE queue_name = $1::text
            """;

    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    private static final Pattern BUFFERS = Pattern.compile("(hit|read)=(\\d+)");

    /** Command-line options; {@code --quick} changes the defaults only. */
    record Options(boolean quick, int pending, long small, long large, int calls, int oldCalls, int warmup,
            Path out, boolean keep, String command) {

        static Options parse(String[] args, Path repo) {
            boolean quick = List.of(args).contains("--quick");
            int pending = 100_000;
            long small = quick ? 200_000 : 1_000_000;
            long large = quick ? 2_000_000 : 20_000_000;
            int calls = quick ? 100 : 200;
            int oldCalls = quick ? 25 : 50;
            int warmup = 10;
            Path out = quick ? repo.resolve("benchmarks/target/stats-history-quick")
                    : repo.resolve("docs/benchmarks/stats-history");
            boolean keep = false;
            for (int i = 0; i < args.length; i++) {
                switch (args[i]) {
                    case "--quick" -> { }
                    case "--pending" -> pending = Integer.parseInt(args[++i]);
                    case "--small" -> small = Long.parseLong(args[++i]);
                    case "--large" -> large = Long.parseLong(args[++i]);
                    case "--calls" -> calls = Integer.parseInt(args[++i]);
                    case "--old-calls" -> oldCalls = Integer.parseInt(args[++i]);
                    case "--warmup" -> warmup = Integer.parseInt(args[++i]);
                    case "--out" -> out = Path.of(args[++i]);
                    case "--keep" -> keep = true;
                    case "--help", "-h" -> {
                        System.out.println("""
                                benchmarks/stats-history.sh [--quick] [--pending N] [--small N] [--large N]
                                    [--calls N] [--old-calls N] [--warmup N] [--out DIR] [--keep]
                                  --quick      100,000 pending over 200,000 then 2,000,000 completed, 100 calls
                                               (25 of the old read); results in benchmarks/target/stats-history-quick
                                  default      100,000 pending over 1,000,000 then 20,000,000 completed, 200 calls
                                               (50 of the old read); results in docs/benchmarks/stats-history
                                  --keep       leave the table in place (it is dropped at the end otherwise)""");
                        System.exit(0);
                    }
                    default -> throw new IllegalArgumentException("unknown argument " + args[i] + " (try --help)");
                }
            }
            if (small >= large || small < 1 || pending < 1000) {
                throw new IllegalArgumentException("need 0 < --small < --large and --pending ≥ 1000, but got "
                        + small + ", " + large + ", " + pending);
            }
            return new Options(quick, pending, small, large, calls, oldCalls, warmup, out, keep,
                    "benchmarks/stats-history.sh" + (args.length == 0 ? "" : " " + String.join(" ", args)));
        }
    }

    /** One statement's timings and plan at one history size. */
    record Read(String name, List<Double> millis, long buffers, String plan) {
        double p50() {
            return Percentiles.median(millis);
        }

        double p99() {
            return Percentiles.of(millis, 99);
        }

        double max() {
            return millis.stream().mapToDouble(Double::doubleValue).max().orElse(Double.NaN);
        }
    }

    /** Everything measured at one history size. */
    record Size(long completed, Read stats, Read health, Read old, Map<String, Object> facts) {}

    private final Db db = Db.fromEnvironment("bench");
    private final Options o;
    private final String table = WorkQueueMigrations.tableName(PREFIX);
    private final LibrarySql sql = LibrarySql.forPrefix(PREFIX);
    private final String oldStats;

    private StatsHistory(Options o) {
        this.o = o;
        this.oldStats = OLD_STATS.formatted(table, sql.due, sql.stalled, sql.leased, sql.completed);
    }

    public static void main(String[] args) throws Exception {
        Path repo = Path.of(System.getProperty("bench.repo", "."));
        new StatsHistory(Options.parse(args, repo)).run(repo);
        System.exit(0);
    }

    private void run(Path repo) throws IOException {
        long suiteStart = System.nanoTime();
        Map<String, Object> machine = Machine.describe(db, repo);
        machine.put("more_settings", db.queryString("SELECT string_agg(name || '=' || current_setting(name), ', ' ORDER BY name)"
                + " FROM pg_settings WHERE name IN ('jit', 'max_parallel_workers_per_gather', 'effective_cache_size',"
                + " 'random_page_cost', 'maintenance_work_mem')"));
        System.out.printf(Locale.ROOT, "%s: %,d pending over %,d then %,d completed; %d calls each (%d of the old read)%n",
                o.command(), o.pending(), o.small(), o.large(), o.calls(), o.oldCalls());

        db.exec("DROP TABLE IF EXISTS " + table);
        db.migrate(PREFIX);
        insertPending();
        List<Size> sizes = new ArrayList<>();
        long built = 0;
        for (long target : List.of(o.small(), o.large())) {
            double buildSeconds = grow(built, target);
            built = target;
            sizes.add(measure(target, buildSeconds));
        }
        machine.put("load_average_end", Machine.loadAverage());
        machine.put("suite_seconds", Math.round((System.nanoTime() - suiteStart) / 1e9));
        if (!o.keep()) {
            db.exec("DROP TABLE " + table);
            System.out.println("dropped " + table);
        }
        write(machine, sizes);
    }

    // ---------------------------------------------------------------- the data

    /** The pending rows, keyed p000000001...; their times are set by {@link #refreshPending}. */
    private void insertPending() {
        db.exec("INSERT INTO " + table + " (queue_name, item_key, priority, enqueued_at)"
                + " SELECT '" + QUEUE + "', 'p' || lpad(g::text, 9, '0'),"
                + "   CASE WHEN g % 10 < 6 THEN 0 WHEN g % 10 < 9 THEN 1 ELSE 2 END, now() - INTERVAL '10 minutes'"
                + " FROM generate_series(1, " + o.pending() + ") AS g");
    }

    /**
     * Gives every pending row its state with times relative to now: one in a thousand out of
     * attempts (released two hours ago, at the head of its band: what the health check reads past),
     * a tenth leased for another hour (claimed from the head: available 20-50 s ago), a twentieth
     * delayed (a retry's back-off, due within the hour), and the rest ready for up to 20 s. So the
     * oldest ready item stays under the health threshold while a size is measured.
     */
    private void refreshPending() {
        db.exec("UPDATE " + table + " AS t SET"
                + " attempts = CASE WHEN s.n % 1000 = 999 THEN " + MAX_ATTEMPTS + " WHEN s.n % 20 < 3 THEN 1 ELSE 0 END,"
                + " available_at = CASE"
                + "   WHEN s.n % 1000 = 999 THEN now() - INTERVAL '2 hours' + (s.n % 3600) * INTERVAL '1 second'"
                + "   WHEN s.n % 20 < 2 THEN now() - INTERVAL '50 seconds' + (s.n % 30000) * INTERVAL '1 millisecond'"
                + "   WHEN s.n % 20 = 2 THEN now() + (s.n % 3600) * INTERVAL '1 second'"
                + "   ELSE now() - (s.n % 20000) * INTERVAL '1 millisecond' END,"
                + " lease_until = CASE WHEN s.n % 1000 <> 999 AND s.n % 20 < 2 THEN now() + INTERVAL '1 hour'"
                + "   ELSE 'epoch' END"
                + " FROM (SELECT item_key, substr(item_key, 2)::int AS n FROM " + table
                + "       WHERE queue_name = '" + QUEUE + "' AND completed_at IS NULL) AS s"
                + " WHERE t.queue_name = '" + QUEUE + "' AND t.item_key = s.item_key");
    }

    /**
     * Adds completed rows c000000001... from {@code from} up to {@code to}, spread evenly over the
     * last 24 hours (ending a minute ago) within each size's new rows, in batches, printing progress.
     */
    private double grow(long from, long to) {
        long start = System.nanoTime();
        long span = to - from;
        for (long first = from + 1; first <= to; first += BUILD_BATCH) {
            long last = Math.min(to, first + BUILD_BATCH - 1);
            db.exec("INSERT INTO " + table + " (queue_name, item_key, priority, attempts, enqueued_at, available_at, completed_at)"
                    + " SELECT '" + QUEUE + "', 'c' || lpad(g::text, 9, '0'),"
                    + "   CASE WHEN g % 10 < 6 THEN 0 WHEN g % 10 < 9 THEN 1 ELSE 2 END, 1, done - INTERVAL '3 seconds',"
                    + "   done - INTERVAL '2 seconds', done"
                    + " FROM generate_series(" + first + ", " + last + ") AS g,"
                    + "   LATERAL (SELECT now() - INTERVAL '1 minute'"
                    + "            - (1 - (g - " + from + " - 0.5) / " + span + ")::float8 * INTERVAL '23 hours 58 minutes' AS done) AS t");
            double seconds = (System.nanoTime() - start) / 1e9;
            System.out.printf(Locale.ROOT, "  completed rows: %,d of %,d (%.0fk rows/s, %.0f s)%n",
                    last, to, (last - from) / seconds / 1000, seconds);
        }
        return (System.nanoTime() - start) / 1e9;
    }

    // ---------------------------------------------------------------- one size

    private Size measure(long completed, double buildSeconds) {
        Map<String, Object> facts = new LinkedHashMap<>();
        facts.put("build_seconds", round(buildSeconds));
        long t = System.nanoTime();
        refreshPending();
        // Autovacuum is off on this server: do what it would have done after the load and the update.
        // Index cleanup forced: at the large size the re-timed pending rows' old versions sit on under
        // 2 % of the table's pages, where VACUUM skips cleaning the indexes (its bypass), so the two
        // sizes would be read with their due indexes in different states: one cleaned, one holding
        // the re-timing's dead entries, which only this harness's way of building a table leaves.
        db.exec("VACUUM (ANALYZE, INDEX_CLEANUP ON) " + table, "CHECKPOINT");
        facts.put("vacuum_analyze_seconds", round((System.nanoTime() - t) / 1e9));
        // What VACUUM could not remove (a snapshot held elsewhere on the server keeps dead versions,
        // whose index entries later reads step over), and who held the oldest snapshot then.
        facts.put("dead_tuples_after_vacuum", db.queryLong("SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = '"
                + table + "'"));
        facts.put("oldest_snapshot_after_vacuum", db.queryString("SELECT coalesce(max(age(backend_xmin))::text || ' xids, database '"
                + " || (array_agg(datname ORDER BY age(backend_xmin) DESC))[1], 'none') FROM pg_stat_activity"
                + " WHERE backend_xmin IS NOT NULL AND pid <> pg_backend_pid()"));
        facts.putAll(sizes());
        System.out.printf(Locale.ROOT, "%,d completed: built in %.0f s, VACUUM ANALYZE + CHECKPOINT %.0f s; %s%n",
                completed, buildSeconds, (System.nanoTime() - t) / 1e9, facts);

        String app = "stats-history";
        ConnectionPool pool = db.pool(app, 2);
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(pool, String.class)
                .config(WorkQueueConfig.builder(QUEUE).tablePrefix(PREFIX).maxAttempts(MAX_ATTEMPTS).build())
                .build();

        // A queue in service is claimed from, and each instance's look behind its claim cursors walks
        // every band from its head to its first due item. That index scan marks the entries of dead
        // versions it passes (the index's kill bits), and later reads, the stats read's bitmap scan
        // included, skip them. Nothing claims from this table, so run the look once, as the first
        // instance to claim would; what stats() cost before it is kept beside (its own calls only: the
        // health check's index scan marks entries too).
        List<Double> beforeLookMillis = new ArrayList<>();
        for (int call = 0; call < LOOK_WARMUP_CALLS + LOOK_CALLS; call++) {
            record(call >= LOOK_WARMUP_CALLS, beforeLookMillis, () -> queue.stats());
        }
        facts.put("stats_p50_ms_before_look", round3(Percentiles.median(beforeLookMillis)));
        facts.put("stats_max_ms_before_look", round3(Collections.max(beforeLookMillis)));
        String statsCompleted = sql.statsCompleted.replace("$1", "'" + QUEUE + "'");
        String beforeLook = explainAfter(pool, statsCompleted, sql.stats, QUEUE, MAX_ATTEMPTS);
        facts.put("stats_buffers_before_look", buffers(beforeLook));
        facts.put("stats_ms_before_look", executionMillis(beforeLook));
        facts.put("stats_index_entries_before_look", bitmapEntries(beforeLook));
        facts.put("look_buffers", buffers(explain(pool, sql.lookBehindCursors, QUEUE, MAX_ATTEMPTS)));
        facts.put("stats_index_entries_after_look",
                bitmapEntries(explainAfter(pool, statsCompleted, sql.stats, QUEUE, MAX_ATTEMPTS)));

        Stats first = queue.stats().block();
        Map<String, Object> oldFirst = oldRead(pool).block();
        facts.put("stats_at_start", String.valueOf(first));
        facts.put("old_read_at_start", oldFirst);
        check(first, oldFirst, completed);

        List<Double> statsMillis = new ArrayList<>();
        List<Double> healthMillis = new ArrayList<>();
        List<Double> oldMillis = new ArrayList<>();
        int every = Math.max(1, o.calls() / Math.max(1, o.oldCalls()));
        int late = 0;
        long phaseStart = System.nanoTime();
        for (int round = 0; round < o.warmup() + o.calls(); round++) {
            boolean kept = round >= o.warmup();
            // Alternate which of the two goes first, so neither always follows the other.
            if (round % 2 == 0) {
                record(kept, statsMillis, () -> queue.stats());
                late += Boolean.TRUE.equals(record(kept, healthMillis, () -> queue.readyLongerThan(HEALTH_THRESHOLD))) ? 1 : 0;
            } else {
                late += Boolean.TRUE.equals(record(kept, healthMillis, () -> queue.readyLongerThan(HEALTH_THRESHOLD))) ? 1 : 0;
                record(kept, statsMillis, () -> queue.stats());
            }
            if (round % every == 0 && (round >= o.warmup() ? oldMillis.size() < o.oldCalls() : true)) {
                record(kept, oldMillis, () -> oldRead(pool));
            }
            if ((round + 1) % 50 == 0) {
                System.out.printf(Locale.ROOT, "  round %d: stats p50 %.1f ms, health p50 %.2f ms, old read p50 %.0f ms (%d)%n",
                        round + 1, Percentiles.median(statsMillis), Percentiles.median(healthMillis),
                        Percentiles.median(oldMillis), oldMillis.size());
            }
        }
        facts.put("measure_seconds", round((System.nanoTime() - phaseStart) / 1e9));
        facts.put("health_check_answered_late", late);
        Stats last = queue.stats().block();
        facts.put("stats_at_end", String.valueOf(last));

        // The pending counts as the library runs them: after statsCompleted, in its transaction, under
        // the settings it made (the completed count itself reads the reap index, a few hundred buffers).
        Read stats = new Read("stats()", statsMillis, 0, explainAfter(pool, statsCompleted, sql.stats, QUEUE, MAX_ATTEMPTS));
        Read health = new Read("readyLongerThan(5 min)", healthMillis, 0,
                explain(pool, sql.readyLongerThan, QUEUE, MAX_ATTEMPTS, HEALTH_THRESHOLD.toNanos() / 1000));
        Read old = new Read("old stats read", oldMillis, 0, explain(pool, oldStats, QUEUE, MAX_ATTEMPTS));
        // Not what the library runs: the pending counts without the bitmap, as the planner chose by
        // itself before statsCompleted steered it (the due index in its order, a buffer per row, or
        // the whole table when that looks cheaper).
        String indexPath = explainAfter(pool, "SET LOCAL enable_bitmapscan = off", sql.stats, QUEUE, MAX_ATTEMPTS);
        facts.put("stats_plan_in_index_order", indexPath);
        facts.put("stats_buffers_in_index_order", buffers(indexPath));
        facts.put("stats_ms_in_index_order", executionMillis(indexPath));
        // Nor is this: the pending counts planned as the server likes, JIT and all, as they once ran.
        String unsteered = explain(pool, sql.stats, QUEUE, MAX_ATTEMPTS);
        facts.put("stats_ms_unsteered", executionMillis(unsteered));
        facts.put("stats_buffers_unsteered", buffers(unsteered));
        facts.put("stats_jit_ms_unsteered", jitMillis(unsteered));
        // Also what the health check reads when it has something to report at once.
        facts.put("health_check_buffers_when_late", buffers(explain(pool, sql.readyLongerThan, QUEUE, MAX_ATTEMPTS, 0L)));
        db.dispose(pool, app);

        Size size = new Size(completed, withBuffers(stats), withBuffers(health), withBuffers(old), facts);
        System.out.printf(Locale.ROOT, "%,d completed: stats() p50 %.2f p99 %.2f ms (%d buffers); readyLongerThan p50 %.2f"
                        + " p99 %.2f ms (%d); old read p50 %.1f p99 %.1f ms (%d); health check late %d times%n",
                completed, size.stats().p50(), size.stats().p99(), size.stats().buffers(), size.health().p50(),
                size.health().p99(), size.health().buffers(), size.old().p50(), size.old().p99(), size.old().buffers(), late);
        return size;
    }

    /** The old read and the new one see the same queue: same pending counts, and the old one counts every completed row. */
    private void check(Stats stats, Map<String, Object> old, long completed) {
        boolean same = stats.pending() == ((Number) old.get("pending")).longValue()
                && stats.ready() == ((Number) old.get("ready")).longValue()
                && stats.leased() == ((Number) old.get("leased")).longValue()
                && stats.stalled() == ((Number) old.get("stalled")).longValue()
                && ((Number) old.get("completed")).longValue() == completed
                && stats.pending() == o.pending()
                && stats.completedCapped();
        if (!same) {
            throw new IllegalStateException("the reads disagree about the table: " + stats + " vs " + old);
        }
        if (stats.oldestReadyAge().compareTo(HEALTH_THRESHOLD) >= 0) {
            throw new IllegalStateException("the ready items are already older than the health threshold: " + stats);
        }
    }

    private static <T> T record(boolean kept, List<Double> into, Supplier<Mono<T>> call) {
        long start = System.nanoTime();
        T value = call.get().block();
        double millis = (System.nanoTime() - start) / 1e6;
        if (kept) {
            into.add(millis);
        }
        return value;
    }

    /** The old stats read, bound as the library bound it, on a connection of the queue's pool. */
    private Mono<Map<String, Object>> oldRead(ConnectionPool pool) {
        return Mono.usingWhen(pool.create(),
                (Connection c) -> Flux.from(c.createStatement(oldStats).bind(0, QUEUE).bind(1, MAX_ATTEMPTS).execute())
                        .concatMap(result -> result.map((row, meta) -> {
                            Map<String, Object> counts = new LinkedHashMap<>();
                            for (String column : List.of("pending", "ready", "leased", "stalled", "completed", "oldest_ready_us")) {
                                counts.put(column, row.get(column, Long.class));
                            }
                            return counts;
                        }))
                        .single(),
                Connection::close);
    }

    /** {@code EXPLAIN (ANALYZE, BUFFERS)} of a read with these binds, on the same pool. */
    private static String explain(ConnectionPool pool, String statement, Object... binds) {
        return explainAfter(pool, null, statement, binds);
    }

    /** The same, after {@code setting} (a {@code SET LOCAL}, or a statement that sets) in a transaction of its own, rolled back. */
    private static String explainAfter(ConnectionPool pool, @Nullable String setting, String statement, Object... binds) {
        List<String> lines = Mono.usingWhen(pool.create(), (Connection c) -> Mono.from(c.beginTransaction())
                        .thenMany(setting == null ? Flux.empty()
                                : Flux.from(c.createStatement(setting).execute()).concatMap(r -> r.getRowsUpdated()))
                        .thenMany(Flux.defer(() -> {
                            Statement explain = c.createStatement("EXPLAIN (ANALYZE, BUFFERS) " + statement);
                            for (int i = 0; i < binds.length; i++) {
                                explain.bind(i, binds[i]);
                            }
                            return Flux.from(explain.execute()).concatMap(r -> r.map((row, meta) -> row.get(0, String.class)));
                        }))
                        .collectList()
                        .flatMap(list -> Mono.from(c.rollbackTransaction()).thenReturn(list)),
                Connection::close)
                .block(Duration.ofMinutes(5));
        return String.join("\n", lines);
    }

    /** The time JIT compilation took in a plan's execution; 0 when the plan was not compiled. */
    static double jitMillis(String plan) {
        Matcher m = Pattern.compile("Timing: .*Total ([0-9.]+) ms").matcher(plan);
        return m.find() ? Double.parseDouble(m.group(1)) : 0;
    }

    /** The entries the bitmap index scan of a plan returned (dead versions' entries included unless marked). */
    static long bitmapEntries(String plan) {
        Matcher m = Pattern.compile("Bitmap Index Scan on \\S+_due_idx .*\\(actual time=[0-9.]+\\.\\.[0-9.]+ rows=(\\d+)").matcher(plan);
        return m.find() ? Long.parseLong(m.group(1)) : -1;
    }

    /** The server's own execution time from a plan. */
    static double executionMillis(String plan) {
        Matcher m = Pattern.compile("Execution Time: ([0-9.]+) ms").matcher(plan);
        return m.find() ? Double.parseDouble(m.group(1)) : Double.NaN;
    }

    private static Read withBuffers(Read read) {
        return new Read(read.name(), read.millis(), buffers(read.plan()), read.plan());
    }

    /** Shared buffers hit or read by the whole statement: the first "Buffers:" line is the top node's, which counts its subplans. */
    static long buffers(String plan) {
        String top = plan.lines().filter(line -> line.trim().startsWith("Buffers: shared")).findFirst()
                .orElseThrow(() -> new IllegalStateException("no buffer counts in\n" + plan));
        long touched = 0;
        Matcher m = BUFFERS.matcher(top.substring(0, top.contains("|") ? top.indexOf('|') : top.length()));
        while (m.find()) {
            touched += Long.parseLong(m.group(2));
        }
        return touched;
    }

    private Map<String, Object> sizes() {
        Map<String, Object> sizes = new LinkedHashMap<>();
        for (String relation : List.of(table, PREFIX + "_work_queue_items_pkey", PREFIX + "_work_queue_items_due_idx",
                PREFIX + "_work_queue_items_reap_idx")) {
            sizes.put(relation.equals(table) ? "heap_mib" : relation.substring(PREFIX.length() + 1) + "_mib",
                    round(db.queryLong("SELECT pg_relation_size('" + relation + "')") / 1048576.0));
        }
        return sizes;
    }

    private static double round(double value) {
        return Math.round(value * 10) / 10.0;
    }

    // ---------------------------------------------------------------- the report

    private void write(Map<String, Object> machine, List<Size> sizes) throws IOException {
        Files.createDirectories(o.out());
        Size small = sizes.get(0);
        Size large = sizes.get(1);
        String s = count(small.completed());
        String l = count(large.completed());

        Table reads = new Table("Latency and buffers per call",
                "read", "completed rows", "calls", "p50 ms", "p99 ms", "max ms", "buffers");
        List<Map<String, Object>> csv = new ArrayList<>();
        for (Size size : sizes) {
            for (Read read : List.of(size.stats(), size.health(), size.old())) {
                reads.row(read.name(), count(size.completed()), read.millis().size(), Table.ms(read.p50()),
                        Table.ms(read.p99()), Table.ms(read.max()), count(read.buffers()));
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("read", read.name());
                row.put("pending", o.pending());
                row.put("completed", size.completed());
                row.put("calls", read.millis().size());
                row.put("p50_ms", round3(read.p50()));
                row.put("p99_ms", round3(read.p99()));
                row.put("max_ms", round3(read.max()));
                row.put("buffers", read.buffers());
                csv.add(row);
            }
        }

        Table ratios = new Table("Ratios",
                "read", l + " ÷ " + s + " p50", "p99", "buffers", "new ÷ old at " + s + " p50", "p99", "buffers",
                "new ÷ old at " + l + " p50", "p99", "buffers");
        ratios.row(ratioRow(small.stats(), large.stats(), small.old(), large.old()));
        ratios.row(ratioRow(small.health(), large.health(), small.old(), large.old()));
        ratios.row(ratioRow(small.old(), large.old(), small.old(), large.old()));

        Table targets = new Table("Targets (issue 23)", "target", "measured", "met?");
        targets.row("stats() ≤ " + (int) STATS_TARGET_MS + " ms at " + count(o.pending()) + " pending + " + l + " completed",
                "p50 " + Table.ms(large.stats().p50()) + " ms, p99 " + Table.ms(large.stats().p99()) + " ms",
                met(large.stats().p50() <= STATS_TARGET_MS, large.stats().p99() <= STATS_TARGET_MS));
        targets.row("health check ≤ " + (int) HEALTH_TARGET_MS + " ms at the same size",
                "p50 " + Table.ms(large.health().p50()) + " ms, p99 " + Table.ms(large.health().p99()) + " ms",
                met(large.health().p50() <= HEALTH_TARGET_MS, large.health().p99() <= HEALTH_TARGET_MS));
        for (Read[] pair : List.of(new Read[] {small.stats(), large.stats()}, new Read[] {small.health(), large.health()})) {
            double p50 = pair[1].p50() / pair[0].p50();
            double p99 = pair[1].p99() / pair[0].p99();
            double buffers = (double) pair[1].buffers() / pair[0].buffers();
            targets.row(pair[0].name() + " grows ≤ 10 % from " + s + " to " + l + " completed",
                    "p50 " + Table.ratio(p50) + ", p99 " + Table.ratio(p99) + ", buffers " + Table.ratio(buffers),
                    met(p50 <= GROWTH_TARGET, p99 <= GROWTH_TARGET) + (buffers <= GROWTH_TARGET ? "; buffers yes" : "; buffers **no**"));
        }

        List<Table> tables = List.of(targets, reads, ratios);
        tables.forEach(Table::print);

        Map<String, Object> results = new LinkedHashMap<>();
        results.put("command", o.command());
        results.put("machine", machine);
        results.put("pending", o.pending());
        results.put("calls", o.calls());
        results.put("old_read_calls", o.oldCalls());
        results.put("warmup_rounds", o.warmup());
        results.put("old_stats_sql", oldStats);
        results.put("stats_sql", sql.stats);
        results.put("ready_longer_than_sql", sql.readyLongerThan);
        List<Map<String, Object>> perSize = new ArrayList<>();
        for (Size size : sizes) {
            Map<String, Object> entry = new LinkedHashMap<>();
            entry.put("completed", size.completed());
            entry.put("facts", size.facts());
            for (Read read : List.of(size.stats(), size.health(), size.old())) {
                Map<String, Object> r = new LinkedHashMap<>();
                r.put("p50_ms", round3(read.p50()));
                r.put("p99_ms", round3(read.p99()));
                r.put("max_ms", round3(read.max()));
                r.put("buffers", read.buffers());
                r.put("millis", read.millis().stream().map(StatsHistory::round3).toList());
                r.put("plan", read.plan());
                entry.put(read.name(), r);
            }
            perSize.add(entry);
        }
        results.put("sizes", perSize);
        JSON.writeValue(o.out().resolve("results.json").toFile(), results);
        Report.csv(o.out().resolve("stats_history.csv"), csv);
        Files.writeString(o.out().resolve("plans.md"), plans(sizes));
        Files.writeString(o.out().resolve("README.md"), readme(machine, sizes, tables));
        System.out.println("wrote " + o.out().resolve("README.md") + ", results.json, stats_history.csv, plans.md");
    }

    private static Object[] ratioRow(Read small, Read large, Read oldSmall, Read oldLarge) {
        return new Object[] {small.name(),
                Table.ratio(large.p50() / small.p50()), Table.ratio(large.p99() / small.p99()),
                Table.ratio((double) large.buffers() / small.buffers()),
                Table.ratio(small.p50() / oldSmall.p50()), Table.ratio(small.p99() / oldSmall.p99()),
                Table.ratio((double) small.buffers() / oldSmall.buffers()),
                Table.ratio(large.p50() / oldLarge.p50()), Table.ratio(large.p99() / oldLarge.p99()),
                Table.ratio((double) large.buffers() / oldLarge.buffers())};
    }

    private static String met(boolean p50, boolean p99) {
        return p50 && p99 ? "yes (p50 and p99)" : p50 ? "p50 yes, p99 **no**" : p99 ? "p50 **no**, p99 yes" : "**no**";
    }

    private static String count(long n) {
        return String.format(Locale.ROOT, "%,d", n);
    }

    private static double round3(double value) {
        return Math.round(value * 1000) / 1000.0;
    }

    private String plans(List<Size> sizes) {
        StringBuilder md = new StringBuilder("# Plans\n\n`EXPLAIN (ANALYZE, BUFFERS)` of each read, run once after its timed"
                + " calls, on the same pool, with the binds the library uses (queue `" + QUEUE + "`, attempt limit "
                + MAX_ATTEMPTS + ", threshold 5 minutes).\n\n");
        for (Size size : sizes) {
            for (Read read : List.of(size.stats(), size.health(), size.old())) {
                md.append("## ").append(read.name()).append(", ").append(count(size.completed())).append(" completed (")
                        .append(count(read.buffers())).append(" buffers)\n\n```\n").append(read.plan()).append("\n```\n\n");
            }
        }
        for (Size size : sizes) {
            md.append("## Diagnostic: stats() with bitmap scans off, ").append(count(size.completed()))
                    .append(" completed (").append(count((Long) size.facts().get("stats_buffers_in_index_order")))
                    .append(" buffers; not what the library runs)\n\n```\n")
                    .append(size.facts().get("stats_plan_in_index_order")).append("\n```\n\n");
        }
        md.append("## The statements\n\n### stats(), first: statsCompleted\n\n```sql\n").append(sql.statsCompleted)
                .append("\n```\n\n### stats(), second: the pending counts\n\n```sql\n").append(sql.stats).append("\n```\n\n")
                .append("### readyLongerThan\n\n```sql\n").append(sql.readyLongerThan).append("\n```\n\n")
                .append("### old stats read (the baseline)\n\n```sql\n").append(oldStats.strip()).append("\n```\n");
        return md.toString();
    }

    private String readme(Map<String, Object> machine, List<Size> sizes, List<Table> tables) {
        StringBuilder md = new StringBuilder();
        md.append("# stats() and the health check beside a day of history\n\n");
        if (Files.exists(o.out().resolve("ANALYSIS.md"))) {
            md.append("What the numbers say: [ANALYSIS.md](ANALYSIS.md).\n\n");
        }
        md.append("Generated by `").append(o.command()).append("` (`StatsHistory.java`) on ").append(machine.get("date_utc"))
                .append(" (").append(machine.get("suite_seconds")).append(" s in all, the table build included). One queue holds ")
                .append(count(o.pending())).append(" pending items beside ").append(count(sizes.get(0).completed()))
                .append(" completed ones, then, the same table grown, ").append(count(sizes.get(1).completed()))
                .append(". At each size, through the library, sequentially on one queue instance: `stats()` and the health check")
                .append(" `readyLongerThan(Duration.ofMinutes(5))`, ").append(o.calls()).append(" calls each after ")
                .append(o.warmup()).append(" warm-up rounds; and, as the baseline in the same run, the stats read the library made")
                .append(" before issue 23 (every row of the queue, history included), issued through R2DBC on the same pool, ")
                .append(o.oldCalls()).append(" calls interleaved with them. Times are from the client: statement, round trip and")
                .append(" decoding. Buffers: shared buffers hit or read by one run of the statement (`EXPLAIN (ANALYZE, BUFFERS)`,")
                .append(" once per size after the timed calls), a cost that does not depend on the machine.\n\n");
        md.append("```\nbenchmarks/stats-history.sh           # the default: 100,000 pending over 1,000,000 then")
                .append(" 20,000,000 completed, results here\n")
                .append("benchmarks/stats-history.sh --quick   # 200,000 then 2,000,000 completed (about 3 min),")
                .append(" results in benchmarks/target/stats-history-quick/\n```\n\n");
        for (Table table : tables) {
            md.append("## ").append(table.title).append("\n\n").append(table.markdown()).append('\n');
        }
        md.append("Ratios: later ÷ earlier for growth, so 1.00× is flat; new ÷ old below 1 means the new read is cheaper.")
                .append(" The old read's own row shows what the history costs when a read counts it.\n\n");
        md.append("## The table\n\n");
        md.append("The library's DDL (`WorkQueueMigrations.apply`, prefix `").append(PREFIX).append("`), so the due, reap and")
                .append(" primary-key indexes are the real ones. Queue `").append(QUEUE).append("`, attempt limit ").append(MAX_ATTEMPTS)
                .append(". Pending items (keys `p…`) in three priority bands, 60/30/10 %: one in a thousand out of attempts")
                .append(" (released two hours ago, so at the head of its band), a tenth leased for another hour (available 20–50 s")
                .append(" ago, as the claim takes them from the head), a twentieth delayed (due within the hour) and the rest ready")
                .append(" for up to 20 s. Their times are set afresh just before each size is measured, so the oldest ready item stays")
                .append(" under the health threshold throughout (the check answers \"no\", the common case; it answered late ")
                .append(sizes.stream().map(z -> String.valueOf(z.facts().get("health_check_answered_late"))).toList())
                .append(" times). Completed items (keys `c…`) spread evenly over the last 24 hours, within the default retention,")
                .append(" inserted by `INSERT … SELECT generate_series` in batches of ").append(count(BUILD_BATCH))
                .append(" rows; the second size adds its rows to the first's table.\n\n");
        md.append("**Autovacuum is off on this server**, so after each load (and the update of the pending rows) the harness ran")
                .append(" `VACUUM (ANALYZE, INDEX_CLEANUP ON)` on the table, as autovacuum would have, then `CHECKPOINT`, so no build")
                .append(" writes overlap the timings. Index cleanup is forced because at the large size the re-timed pending rows' old")
                .append(" versions sit on under 2 % of the table's pages, where VACUUM would skip it (its bypass), and the two sizes")
                .append(" would be read with their due indexes in different states (runs before 2026-12-07 evening did not force it).\n\n");
        md.append("**Then one look behind the claim cursors** (the library's `lookBehindCursors`, run once through `EXPLAIN")
                .append(" (ANALYZE, BUFFERS)`), as the first instance to claim from the queue would run it. A queue in service is")
                .append(" claimed from, and every instance's looks walk each band of the due index from its head to its first due")
                .append(" item; that index scan marks the entries of dead row versions it passes (the index's kill bits), and later")
                .append(" reads, the stats read's bitmap scan included, skip them. With index cleanup forced the VACUUM before it")
                .append(" has already removed the re-timing's dead entries, so the look should find little to mark (earlier runs")
                .append(" relied on it for the large size). Both states, per size: `stats()` before the look ")
                .append(sizes.stream().map(z -> "p50 " + z.facts().get("stats_p50_ms_before_look") + " ms (max "
                        + z.facts().get("stats_max_ms_before_look") + ")").toList())
                .append(" over ").append(LOOK_CALLS).append(" calls after ").append(LOOK_WARMUP_CALLS)
                .append(" warm-up calls; the due index's entries its bitmap returned ")
                .append(sizes.stream().map(z -> count((Long) z.facts().get("stats_index_entries_before_look")) + " before, "
                        + count((Long) z.facts().get("stats_index_entries_after_look")) + " after").toList())
                .append(" the look, for ").append(count(o.pending())).append(" pending rows; the look itself touched ")
                .append(sizes.stream().map(z -> count((Long) z.facts().get("look_buffers"))).toList())
                .append(" buffers, once.\n\n");
        md.append("| completed rows | build s | VACUUM ANALYZE + CHECKPOINT s | heap MiB | pkey MiB | due index MiB | reap index MiB |")
                .append(" timed phase s |\n|---|---|---|---|---|---|---|---|\n");
        for (Size size : sizes) {
            Map<String, Object> f = size.facts();
            md.append("| ").append(count(size.completed())).append(" | ").append(f.get("build_seconds")).append(" | ")
                    .append(f.get("vacuum_analyze_seconds")).append(" | ").append(f.get("heap_mib")).append(" | ")
                    .append(f.get("work_queue_items_pkey_mib")).append(" | ").append(f.get("work_queue_items_due_idx_mib"))
                    .append(" | ").append(f.get("work_queue_items_reap_idx_mib")).append(" | ").append(f.get("measure_seconds"))
                    .append(" |\n");
        }
        md.append("\nBefore timing, each size checks that the two reads agree: the same pending, ready, leased and stalled counts,")
                .append(" the old read's completed count equal to the rows built, `stats()`'s capped at ")
                .append(count(Stats.COMPLETED_COUNT_LIMIT)).append(". At the end of each size: ");
        for (Size size : sizes) {
            md.append("`").append(size.facts().get("stats_at_end")).append("`; ");
        }
        md.setLength(md.length() - 2);
        md.append(". The plans of `stats()`'s pending counts, as the library runs them after `statsCompleted`, are in")
                .append(" [plans.md](plans.md); for comparison (diagnostics, not what the library runs), the same statement")
                .append(" with bitmap scans off (`SET LOCAL enable_bitmapscan = off`: the due index in its order, or the whole table) touched ");
        md.append(sizes.stream().map(z -> count((Long) z.facts().get("stats_buffers_in_index_order")) + " buffers in "
                + z.facts().get("stats_ms_in_index_order") + " ms").toList());
        md.append(" (server execution time, once), and planned as the server likes, without `statsCompleted`'s settings, ")
                .append(sizes.stream().map(z -> count((Long) z.facts().get("stats_buffers_unsteered")) + " buffers in "
                        + z.facts().get("stats_ms_unsteered") + " ms (JIT " + z.facts().get("stats_jit_ms_unsteered")
                        + " ms)").toList())
                .append(". After each VACUUM the table still had ")
                .append(sizes.stream().map(z -> String.valueOf(z.facts().get("dead_tuples_after_vacuum"))).toList())
                .append(" dead tuples VACUUM could not remove; oldest snapshot on the server then: ")
                .append(sizes.stream().map(z -> String.valueOf(z.facts().get("oldest_snapshot_after_vacuum"))).toList())
                .append(".");
        md.append(" The health check with a zero threshold (something late at once) touched ");
        md.append(sizes.stream().map(z -> String.valueOf(z.facts().get("health_check_buffers_when_late"))).toList())
                .append(" buffers.\n\n");
        md.append("The old read is the statement at 2bb7396 with the library's current `DUE`, `LEASED`, `STALLED` and")
                .append(" `COMPLETED` predicates rendered in (they did not change), bound as the library bound it. Plans of every read")
                .append(" at both sizes: [plans.md](plans.md); every timing: [results.json](results.json);")
                .append(" summary: [stats_history.csv](stats_history.csv).\n\n");
        md.append("## Machine\n\n| | |\n|---|---|\n");
        for (String key : List.of("date_utc", "cpu", "nproc", "memory", "os", "postgresql", "postgresql_settings", "more_settings",
                "java", "jvm_args", "git_commit", "git_dirty", "load_average_start", "load_average_end")) {
            md.append("| ").append(key).append(" | ").append(String.valueOf(machine.get(key)).replace("|", "\\|")).append(" |\n");
        }
        md.append("\nA 2-core machine that other builds and tests may have shared during the run (the load averages above):")
                .append(" absolute times move with the load; the three reads were interleaved so it falls on all of them alike,")
                .append(" and the buffer counts do not move with it.\n");
        return md.toString();
    }
}
