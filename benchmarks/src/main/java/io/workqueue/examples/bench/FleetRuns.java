package io.workqueue.examples.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.spi.Connection;
import io.workqueue.Entry;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.migrations.WorkQueueMigrations;
import io.workqueue.notify.PgNotificationListener;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import java.util.concurrent.atomic.AtomicLong;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/** The phases of {@link Fleet}; each adds its rows to the results, its table and its targets. */
final class FleetRuns {
    private final Db db;
    private final Path repo;
    private final String database;
    private final String peerDatabase = System.getenv().getOrDefault("PEER_DB", "bench_fleet_graphile");

    FleetRuns(Db db, Path repo, String database) {
        this.db = db;
        this.repo = repo;
        this.database = database;
    }

    // ------------------------------------------------------------------ 1. drain

    /** One drain by P members: library or peer. */
    record DrainRun(String who, int processes, int repeat, long items, double seconds, double tableSeconds,
            CpuMeter.Use cpu, double sessionSeconds, MembersJit jit, WalMeter.Use wal) {
        double itemsPerSecond() {
            return seconds > 0 ? items / seconds : Double.NaN;
        }

        double serverMicrosPerItem() {
            return items > 0 ? cpu.serverSeconds() * 1e6 / items : Double.NaN;
        }

        double sessionMicrosPerItem() {
            return items > 0 ? sessionSeconds * 1e6 / items : Double.NaN;
        }
    }

    void drain(Fleet.Options o, Map<String, Object> results, List<Table> tables, List<Map<String, Object>> targets)
            throws Exception {
        System.out.println();
        System.out.printf(Locale.ROOT, "== 1. Drain: %,d keys, P = %s processes × %d/P process() workers (batch %d);"
                + " Graphile Worker with the same P, concurrency %d in total%n", o.n, o.processes, o.workers, o.batch,
                o.peerConcurrency);
        db.migrate(Fleet.PREFIX);
        db.migrate(Fleet.WARM_PREFIX);
        List<DrainRun> runs = new ArrayList<>();
        String peerSkipped = null;
        for (int r = 1; r <= o.repeat; r++) {
            for (int p : o.processes) {
                runs.add(libraryDrain(o, p, r, false));
                if (o.splitProcesses.contains(p)) {
                    runs.add(libraryDrain(o, p, r, true));
                }
                if (peerSkipped == null && r <= o.peerRepeat) {
                    DrainRun peer = peerDrain(o, p, r);
                    if (peer == null) {
                        peerSkipped = "Graphile Worker could not be installed or run here";
                    } else {
                        runs.add(peer);
                    }
                }
            }
        }
        List<Map<String, Object>> rows = new ArrayList<>();
        for (DrainRun run : runs) {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("who", run.who());
            row.put("processes", run.processes());
            row.put("repeat", run.repeat());
            row.put("items", run.items());
            row.put("seconds", Bench.round(run.seconds(), 3));
            row.put("items_per_s", Math.round(run.itemsPerSecond()));
            row.put("table_items_per_s", Double.isNaN(run.tableSeconds()) ? "" : Math.round(run.items() / run.tableSeconds()));
            row.put("server_cpu_us_per_item", Bench.round(run.serverMicrosPerItem(), 1));
            row.put("own_sessions_cpu_us_per_item", Bench.round(run.sessionMicrosPerItem(), 1));
            row.put("client_cpu_us_per_item", Bench.round(run.cpu().clientSeconds() * 1e6 / Math.max(1, run.items()), 1));
            row.put("machine_busy", Bench.round(run.cpu().machineBusy(), 3));
            row.put("wal_records_per_item", Bench.round(run.wal().recordsPerItem(run.items()), 2));
            row.put("wal_bytes_per_item", Math.round(run.wal().bytesPerItem(run.items())));
            row.put("wal_full_page_images", run.wal().fullPageImages());
            row.put("checkpoints_during_run", run.wal().checkpoints());
            row.put("wal_from_lsn", run.wal().fromLsn());
            row.put("wal_to_lsn", run.wal().toLsn());
            row.put("members_warmup_rounds", run.jit().warmupRounds());
            row.put("members_jit_ms_during_run", run.jit().duringRun());
            rows.add(row);
        }
        Report.csv(out(o, "drain.csv"), rows);
        Map<String, Object> drain = new LinkedHashMap<>();
        drain.put("runs", rows);
        if (peerSkipped != null) {
            drain.put("peer_skipped", peerSkipped);
        }
        Table t = new Table(String.format(Locale.ROOT, "1. Drain of %,d keys by P processes, %d workers in total (medians)", o.n,
                o.workers), "P", "library items/s", "÷ P=1", "server µs/item", "÷ P=1", "own sessions µs/item", "÷ P=1",
                "WAL records/item", "Graphile items/s", "Graphile server µs/item", "Graphile WAL records/item",
                "library ÷ Graphile items/s", "library ÷ Graphile server µs/item");
        Map<Integer, double[]> lib = new LinkedHashMap<>();
        Map<Integer, double[]> peer = new LinkedHashMap<>();
        for (int p : o.processes) {
            lib.put(p, medians(runs, "library", p));
            peer.put(p, medians(runs, "graphile-worker", p));
        }
        double[] base = lib.get(o.processes.get(0));
        List<Map<String, Object>> summary = new ArrayList<>();
        for (int p : o.processes) {
            double[] l = lib.get(p);
            double[] g = peer.get(p);
            t.row(libraryCells(p, l, base, Table.rate(g[0]), us(g[1]), walRecords(g[3]), Table.ratio(l[0] / g[0]),
                    Table.ratio(l[1] / g[1])));
            Map<String, Object> s = libraryMedians(p, l);
            s.put("graphile_items_per_s", Double.isNaN(g[0]) ? null : Math.round(g[0]));
            s.put("graphile_server_cpu_us_per_item", Double.isNaN(g[1]) ? null : Bench.round(g[1], 1));
            s.put("graphile_own_sessions_cpu_us_per_item", Double.isNaN(g[2]) ? null : Bench.round(g[2], 1));
            s.put("graphile_wal_records_per_item", Double.isNaN(g[3]) ? null : Bench.round(g[3], 2));
            summary.add(s);
            if (o.splitProcesses.contains(p)) {
                double[] split = medians(runs, SPLIT, p);
                t.row(libraryCells(p + ", a queue each", split, base, "—", "—", "—", "—", "—"));
                Map<String, Object> sp = new LinkedHashMap<>(Map.of("processes", p));
                sp.put("layout", "a queue per process");
                sp.putAll(libraryMedians(p, split));
                summary.add(sp);
            }
        }
        drain.put("medians", summary);
        results.put("drain", drain);
        t.note("items/s: all members' completions ÷ (latest completion − go), machine clock. Server µs/item: every postgres"
                + " process (/proc); own sessions: only the backends of this drain's database. Every run per P is in drain.csv,"
                + " with the table-based rate for the library (Drain's formula) beside the client-based one. WAL records per"
                + " item: what the server logged during the run (pg_stat_wal, the whole cluster), a count the machine's load"
                + " does not move; a row a claim locks and then lets go (leased by another member since the claim's snapshot)"
                + " is a record too; WAL bytes and the checkpoints that began during each run are in drain.csv."
                + (o.splitProcesses.isEmpty() ? "" : " \"A queue each\": the same backlog split evenly over P queues of the"
                        + " same table, each process draining only its own, so no claim meets another process's leases: what P"
                        + " processes cost without a shared frontier (not a target; ÷ P=1 against the one-queue P = 1).")
                + (peerSkipped != null ? " Peer skipped: " + peerSkipped + "." : ""));
        tables.add(t);
        t.print();
        int last = o.processes.get(o.processes.size() - 1);
        int first = o.processes.get(0);
        double[] top = lib.get(last);
        targets.add(Fleet.target(String.format(Locale.ROOT, "Drain: server µs per item at P = %d ≤ 1.25× P = %d (same total W = %d)",
                        last, first, o.workers),
                String.format(Locale.ROOT, "%s vs %s µs/item (own sessions: %s vs %s)", us(top[1]), us(base[1]), us(top[2]), us(base[2])),
                top[1] / base[1], 1.25, false));
        targets.add(Fleet.target(String.format(Locale.ROOT, "… the same, own sessions only (not in the issue: robust to a shared server)"),
                String.format(Locale.ROOT, "%s vs %s µs/item", us(top[2]), us(base[2])), top[2] / base[2], 1.25, false));
    }

    /** Median items/s, server µs/item, own-session µs/item and WAL records/item of one side at one P; NaN when none ran. */
    private static double[] medians(List<DrainRun> runs, String who, int p) {
        List<DrainRun> cell = runs.stream().filter(r -> r.who().equals(who) && r.processes() == p).toList();
        return new double[] {Percentiles.median(cell.stream().map(DrainRun::itemsPerSecond).toList()),
                Percentiles.median(cell.stream().map(DrainRun::serverMicrosPerItem).toList()),
                Percentiles.median(cell.stream().map(DrainRun::sessionMicrosPerItem).toList()),
                Percentiles.median(cell.stream().map(r -> r.wal().recordsPerItem(r.items())).toList())};
    }

    /** A drain table row: the label, the library's medians {@code l} and their ratios to {@code base}, then {@code rest}. */
    private static Object[] libraryCells(Object label, double[] l, double[] base, Object... rest) {
        List<Object> cells = new ArrayList<>(List.of(label, Table.rate(l[0]), Table.ratio(l[0] / base[0]), us(l[1]),
                Table.ratio(l[1] / base[1]), us(l[2]), Table.ratio(l[2] / base[2]), walRecords(l[3])));
        cells.addAll(Arrays.asList(rest));
        return cells.toArray();
    }

    /** The library's medians {@code l} at {@code p} processes, as results.json's summary names them. */
    private static Map<String, Object> libraryMedians(int p, double[] l) {
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("processes", p);
        s.put("library_items_per_s", Math.round(l[0]));
        s.put("library_server_cpu_us_per_item", Bench.round(l[1], 1));
        s.put("library_own_sessions_cpu_us_per_item", Bench.round(l[2], 1));
        s.put("library_wal_records_per_item", Bench.round(l[3], 2));
        return s;
    }

    private static String walRecords(double perItem) {
        return Double.isNaN(perItem) ? "—" : String.format(Locale.ROOT, "%.2f", perItem);
    }

    /**
     * One drain of {@code o.n} keys by {@code p} member processes: all on one queue, or, when
     * {@code split}, the keys spread evenly over {@code p} queues of the same table and each member
     * draining only its own (the due index leads with the queue's name, so each member then has a
     * frontier of its own).
     */
    private DrainRun libraryDrain(Fleet.Options o, int p, int repeat, boolean split) throws Exception {
        List<String> queues = split ? IntStream.range(0, p).mapToObj(i -> Fleet.QUEUE + "-" + i).toList() : List.of(Fleet.QUEUE);
        // Split, the backlog is o.n rounded down to a multiple of P, so that the drain's end is reached.
        int perQueue = o.n / queues.size();
        db.preload(Fleet.PREFIX, queues, perQueue);
        db.exec("TRUNCATE " + WorkQueueMigrations.tableName(Fleet.WARM_PREFIX));
        List<Fleet.Member> members = new ArrayList<>();
        for (int i = 0; i < p; i++) {
            members.add(new Fleet.Member("lib-" + p + "." + i, Fleet.javaMember(database, "drain", p + "." + i,
                    String.valueOf(o.workers / p), String.valueOf(o.batch), Fleet.PREFIX, queues.get(split ? i : 0), String.valueOf(o.warmup))));
        }
        String table = WorkQueueMigrations.tableName(Fleet.PREFIX);
        Measured m = measure(members, database, (long) perQueue * queues.size(), o.drainCapSeconds, Duration.ofMinutes(3));
        if (m == null) {
            throw new IllegalStateException("library members did not start");
        }
        List<double[]> table2 = db.query("SELECT count(*)::float8, coalesce(extract(epoch FROM max(completed_at))::float8, 0)"
                        + " FROM " + table + " WHERE queue_name = ANY (" + Db.textArray(queues) + ") AND completed_at IS NOT NULL",
                row -> new double[] {row.get(0, Double.class), row.get(1, Double.class)});
        double tableSeconds = table2.get(0)[1] - m.serverGo;
        DrainRun run = new DrainRun(split ? SPLIT : "library", p, repeat, (long) table2.get(0)[0], m.seconds, tableSeconds, m.cpu, m.sessionSeconds,
                MembersJit.of(m.reports), m.wal);
        print(run);
        return run;
    }

    private DrainRun peerDrain(Fleet.Options o, int p, int repeat) throws Exception {
        Path script = repo.resolve("benchmarks/peers/graphile-worker/run.sh");
        ProcessBuilder add = peerProcess(script, o.n).redirectError(ProcessBuilder.Redirect.INHERIT);
        add.environment().put("ROLE", "add");
        Process adding = add.start();
        String out = new String(adding.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).trim();
        if (!adding.waitFor(10, TimeUnit.MINUTES) || adding.exitValue() != 0) {
            System.out.println("  peer graphile-worker SKIPPED: its add step failed (exit "
                    + (adding.isAlive() ? "timeout" : adding.exitValue()) + ")");
            return null;
        }
        Map<?, ?> added = new ObjectMapper().readValue(out.substring(out.lastIndexOf('\n') + 1), Map.class);
        long queued = ((Number) added.get("queued")).longValue();
        List<Fleet.Member> members = new ArrayList<>();
        for (int i = 0; i < p; i++) {
            ProcessBuilder work = peerProcess(script, o.n);
            work.environment().put("ROLE", "work");
            work.environment().put("CONCURRENCY", String.valueOf(Math.max(1, o.peerConcurrency / p)));
            members.add(new Fleet.Member("graphile-" + p + "." + i, work));
        }
        Measured m = measure(members, peerDatabase, queued, o.drainCapSeconds, Duration.ofMinutes(2));
        if (m == null) {
            System.out.println("  peer graphile-worker SKIPPED: its workers did not start");
            return null;
        }
        DrainRun run = new DrainRun("graphile-worker", p, repeat, m.completed, m.seconds, Double.NaN, m.cpu, m.sessionSeconds,
                MembersJit.NONE, m.wal);
        print(run);
        return run;
    }

    private ProcessBuilder peerProcess(Path script, int n) {
        ProcessBuilder b = new ProcessBuilder("bash", script.toString(), String.valueOf(n));
        b.environment().put("PGHOST", db.host);
        b.environment().put("PGPORT", String.valueOf(db.port));
        b.environment().put("PGUSER", db.user);
        b.environment().put("PEER_DB", peerDatabase);
        b.environment().put("PEER_SCRIPT", "fleet.mjs");
        return b;
    }

    /** Who a drain of the library with a queue per member process is, in drain.csv and the medians. */
    static final String SPLIT = "library-queue-each";

    private static void print(DrainRun run) {
        System.out.printf(Locale.ROOT, "  drain %-18s P=%d #%d %8d items in %6.2f s = %8.0f items/s (table %s);"
                        + " server %5.1f µs/item (own sessions %5.1f), client %5.1f µs/item, machine %3.0f%% busy;"
                        + " WAL %.2f records, %.0f bytes per item%s%s%n",
                run.who(), run.processes(), run.repeat(), run.items(), run.seconds(), run.itemsPerSecond(),
                Double.isNaN(run.tableSeconds()) ? "—" : String.format(Locale.ROOT, "%.0f", run.items() / run.tableSeconds()),
                run.serverMicrosPerItem(), run.sessionMicrosPerItem(),
                run.cpu().clientSeconds() * 1e6 / Math.max(1, run.items()), 100 * run.cpu().machineBusy(),
                run.wal().recordsPerItem(run.items()), run.wal().bytesPerItem(run.items()),
                run.wal().checkpoints() > 0 ? " (a checkpoint began during it)" : "",
                run.jit().duringRun().isEmpty() ? "" : "; members' JIT compiling " + run.jit().duringRun() + " ms during it,"
                        + " after " + run.jit().warmupRounds() + " warm-up rounds");
    }

    /**
     * What the library members' JIT did: the most warm-up rounds any member needed before its JIT
     * settled, and the compile time all members spent during the measured drain, in milliseconds
     * ({@link FleetMember#JIT_SETTLED_SHARE}; the JVM's elapsed compile time, which on a busy machine
     * includes a compiler thread's waits for a core); both empty for the peer.
     */
    record MembersJit(String warmupRounds, String duringRun) {
        static final MembersJit NONE = new MembersJit("", "");

        static MembersJit of(List<Map<String, Object>> reports) {
            long rounds = 0;
            long during = 0;
            for (Map<String, Object> r : reports) {
                rounds = Math.max(rounds, r.get("warmup_rounds") instanceof Number n ? n.longValue() : 0);
                during += r.get("jit_ms_during_run") instanceof Number n ? n.longValue() : 0;
            }
            return new MembersJit(Long.toString(rounds), Long.toString(during));
        }
    }

    /**
     * A checkpoint before each measured stretch, so that none begins during it only to flush what
     * earlier runs, preloads and warm-ups dirtied: the checkpointer's CPU counts as the server's, and
     * a checkpoint's writes slow every commit's WAL flush while they last. Each stretch then starts
     * alike (its first change to each page logs a full-page image). One may still begin during a
     * long stretch; drain.csv says when.
     */
    private void flushEarlierWrites() {
        db.exec("CHECKPOINT");
    }

    /** What a measured stretch of members' work came to. */
    private record Measured(long completed, double seconds, CpuMeter.Use cpu, double sessionSeconds, double serverGo,
            List<Map<String, Object>> reports, WalMeter.Use wal) {}

    /**
     * Waits for the members' {@code ready}, takes the counters, sends {@code go}; when their
     * progress reaches {@code items} (or {@code capSeconds} pass; with {@code items} 0 it waits for
     * each member to report on its own) sends {@code stop}, waits for every report, takes the
     * counters again while the sessions are still open, and lets the members exit.
     */
    private Measured measure(List<Fleet.Member> members, String sessionsOf, long items, int capSeconds, Duration startup)
            throws InterruptedException {
        return measure(members, sessionsOf, items, capSeconds, startup, () -> { });
    }

    /** {@link #measure(List, String, long, int, Duration)}, running {@code beforeGo} once every member is ready. */
    private Measured measure(List<Fleet.Member> members, String sessionsOf, long items, int capSeconds, Duration startup,
            Runnable beforeGo) throws InterruptedException {
        try {
            if (!Fleet.allReady(members, startup)) {
                return null;
            }
            beforeGo.run();
            flushEarlierWrites();
            double serverGo = db.query("SELECT extract(epoch FROM clock_timestamp())::float8", row -> row.get(0, Double.class)).get(0);
            Map<Long, Double> sessionsBefore = Fleet.sessionCpu(db, sessionsOf);
            WalMeter.Snapshot walBefore = WalMeter.take(db);
            CpuMeter.Snapshot before = CpuMeter.take();
            long go = FleetMember.epochMicros();
            members.forEach(m -> m.send("go"));
            if (items > 0) {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(capSeconds);
                while (members.stream().mapToLong(m -> m.progress.get()).sum() < items && System.nanoTime() < deadline
                        && members.stream().allMatch(m -> m.process.isAlive())) {
                    Thread.sleep(5);
                }
                members.forEach(m -> m.send("stop"));
                Fleet.allDone(members, Duration.ofSeconds(90));
            } else {
                Fleet.allDone(members, Duration.ofSeconds(capSeconds));
            }
            CpuMeter.Use cpu = CpuMeter.take().since(before);
            WalMeter.Use wal = WalMeter.take(db).since(walBefore);
            double sessions = Fleet.sessionCpuSince(sessionsBefore, Fleet.sessionCpu(db, sessionsOf));
            long completed = 0;
            long last = go;
            List<Map<String, Object>> reports = new ArrayList<>();
            for (Fleet.Member m : members) {
                reports.add(m.report);
                completed += m.report.get("completed") instanceof Number n ? n.longValue() : 0;
                if (m.report.get("last_completion_epoch_us") instanceof Number n) {
                    last = Math.max(last, n.longValue());
                }
            }
            return new Measured(completed, (last - go) / 1e6, cpu, sessions, serverGo, reports, wal);
        } finally {
            for (Fleet.Member m : members) {
                m.exit();
            }
        }
    }

    // ------------------------------------------------------------------ 2. transactional enqueue

    /**
     * How the consumer of a transactional-enqueue round learns of work: a notify channel and a
     * listener (and its 1 s poll), its 1 s poll alone, or a 10 ms poll with no channel (as prompt
     * as the channel, without NOTIFY: what prompt consumption costs the enqueuers by itself). The
     * channel runs twice: with a wake floor of 1 ms, and with 10 ms, the floor that still keeps the
     * issue's p50 of 10 ms, where the notifier and the consumer's wakes run at most 100 times a
     * second instead of about 200.
     */
    enum TxMode {
        NONE("no channel", "none", Duration.ofSeconds(1), false, 1, false),
        CHANNEL("notify channel, listening consumer", "channel", Duration.ofSeconds(1), true, 1, false),
        CHANNEL_FLOOR("notify channel, listening consumer, minWakeInterval 10 ms", "channel_floor_10ms",
                Duration.ofSeconds(1), true, 10, false),
        ANNOUNCED("notify channel, listening consumer, transactions bracketed (announceAfterCommit)", "announced",
                Duration.ofSeconds(1), true, 1, true),
        ANNOUNCED_FLOOR("notify channel, listening consumer, bracketed, minWakeInterval 10 ms", "announced_floor_10ms",
                Duration.ofSeconds(1), true, 10, true),
        POLLING("no channel, consumer polling every 10 ms", "polling", Duration.ofMillis(10), false, 1, false),
        UNHEARD("notify channel, consumer not listening, polling every 10 ms", "unheard", Duration.ofMillis(10), true, 1, false);

        final String label;
        final String key;
        final Duration poll;
        /** Whether the producer's queue has the channel: its notifier runs. */
        final boolean notifies;
        /** Both queues' {@code minWakeInterval}: the notifier's and the consumer's wake floor. */
        final Duration wakeFloor;
        /**
         * Whether each business transaction runs inside {@code ReactiveWorkQueue.announceAfterCommit}:
         * its commit is announced by the bracket, so the notifier asks the database about nothing.
         */
        final boolean announced;

        TxMode(String label, String key, Duration poll, boolean notifies, int wakeFloorMillis, boolean announced) {
            this.label = label;
            this.key = key;
            this.poll = poll;
            this.notifies = notifies;
            this.wakeFloor = Duration.ofMillis(wakeFloorMillis);
            this.announced = announced;
        }

        /** {@code transaction}, bracketed if this mode brackets transactions. */
        <T> Mono<T> bracket(Mono<T> transaction) {
            return announced ? ReactiveWorkQueue.announceAfterCommit(transaction) : transaction;
        }

        /** Modes by key, comma-separated, in the order given. */
        static List<TxMode> parseAll(String keys) {
            List<TxMode> modes = new ArrayList<>();
            for (String key : keys.split(",")) {
                modes.add(Arrays.stream(values()).filter(mode -> mode.key.equals(key.trim())).findFirst()
                        .orElseThrow(() -> new IllegalArgumentException("no transactional-enqueue mode " + key + "; the modes: "
                                + Arrays.stream(values()).map(mode -> mode.key).toList())));
            }
            return List.copyOf(modes);
        }
    }

    /** The most untimed passes over the modes before the measured rounds of the transactional phase. */
    static final int TX_MAX_WARMUP_PASSES = 4;

    /** One round of transactional enqueues. */
    record TxRound(TxMode mode, int round, long commits, long failures, double seconds, CpuMeter.Use cpu,
            double clientCpuMicrosPerTx, List<Double> latenciesMillis, long notHandedOut, long jitMillis) {
        double tps() {
            return commits / seconds;
        }
    }

    void transactionalEnqueue(Fleet.Options o, Map<String, Object> results, List<Table> tables,
            List<Map<String, Object>> targets) throws Exception {
        System.out.println();
        System.out.printf(Locale.ROOT, "== 2. Transactional enqueue: %d concurrent business transactions, %d s rounds,"
                + " channel vs none alternating, %d rounds each%n", o.txCallers, o.txSeconds, o.txRounds);
        db.migrate(Fleet.TX_PREFIX);
        db.exec("CREATE TABLE IF NOT EXISTS " + Fleet.BUSINESS_TABLE + " (id bigserial PRIMARY KEY, ref text NOT NULL,"
                + " created_at timestamptz NOT NULL DEFAULT now())");
        String app = "fleet-tx";
        ConnectionPool enqueuers = db.pool(app, o.txCallers);
        ConnectionPool consumers = db.pool(app + "-consumer", 4);
        PgNotificationListener listener = PgNotificationListener.builder(db.factory(app + "-listener"))
                .channel(Fleet.TX_CHANNEL).build();
        List<TxRound> rounds = new ArrayList<>();
        int warmupPasses = 0;
        boolean settled = false;
        try {
            // Untimed passes over every mode, each round as long as a measured one, until a pass in
            // which no mode's round kept the JIT compiling for more than JIT_SETTLED_SHARE of it: one
            // pass left it compiling for 2-4 s of some channel rounds' 10 s through the third
            // measured round, and throughput of both modes still rose by half from the first
            // measured round to the fourth. A service compiles its paths once; a mode measured
            // while they compile would pay for it.
            while (!settled && warmupPasses < (o.quick ? 1 : TX_MAX_WARMUP_PASSES)) {
                warmupPasses++;
                settled = true;
                for (TxMode mode : o.txModes) {
                    TxRound warm = txRound(o, enqueuers, consumers, listener, mode, 0, o.txSeconds);
                    settled &= warm.jitMillis() <= FleetMember.JIT_SETTLED_SHARE * warm.seconds() * 1000;
                }
            }
            for (int r = 1; r <= o.txRounds; r++) {
                // Rotate which goes first, so a drift in the machine's load falls on every mode.
                for (int m = 0; m < o.txModes.size(); m++) {
                    TxMode mode = o.txModes.get((m + r) % o.txModes.size());
                    rounds.add(txRound(o, enqueuers, consumers, listener, mode, r, o.txSeconds));
                }
            }
        } finally {
            listener.close().block(Duration.ofSeconds(30));
            db.dispose(consumers, app + "-consumer");
            db.dispose(enqueuers, app);
        }
        List<Map<String, Object>> rows = new ArrayList<>();
        for (TxRound r : rounds) {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("mode", r.mode().key);
            row.put("round", r.round());
            row.put("commits", r.commits());
            row.put("failures", r.failures());
            row.put("seconds", Bench.round(r.seconds(), 3));
            row.put("tps", Math.round(r.tps()));
            row.put("server_cpu_us_per_tx", Bench.round(r.cpu().serverSeconds() * 1e6 / Math.max(1, r.commits()), 1));
            row.put("client_cpu_us_per_tx", Bench.round(r.clientCpuMicrosPerTx(), 1));
            row.put("latency_p50_ms", Bench.round(Percentiles.of(r.latenciesMillis(), 50), 3));
            row.put("latency_p99_ms", Bench.round(Percentiles.of(r.latenciesMillis(), 99), 3));
            row.put("latency_max_ms", Bench.round(Percentiles.of(r.latenciesMillis(), 100), 3));
            row.put("not_handed_out", r.notHandedOut());
            row.put("jit_ms_during_round", r.jitMillis());
            rows.add(row);
        }
        Report.csv(out(o, "txenqueue.csv"), rows);
        Table t = new Table(String.format(Locale.ROOT, "2. Transactional enqueue, %d concurrent business transactions", o.txCallers),
                "queue", "tps (median of rounds)", "÷ no channel", "server µs/tx", "client µs/tx", "commit → handed out p50 ms",
                "p99", "max",
                "> 100 ms", "never handed out");
        Map<String, Object> summary = new LinkedHashMap<>();
        Map<TxMode, Double> tpsOf = new EnumMap<>(TxMode.class);
        for (TxMode mode : o.txModes) {
            tpsOf.put(mode, Percentiles.median(rounds.stream().filter(r -> r.mode() == mode).map(TxRound::tps).toList()));
        }
        Map<TxMode, List<Double>> latenciesOf = new EnumMap<>(TxMode.class);
        for (TxMode mode : o.txModes) {
            List<TxRound> side = rounds.stream().filter(r -> r.mode() == mode).toList();
            double tps = tpsOf.get(mode);
            List<Double> lat = new ArrayList<>();
            side.forEach(r -> lat.addAll(r.latenciesMillis()));
            latenciesOf.put(mode, lat);
            long late = lat.stream().filter(x -> x > 100).count();
            long missing = side.stream().mapToLong(TxRound::notHandedOut).sum();
            double cpu = Percentiles.median(side.stream().map(r -> r.cpu().serverSeconds() * 1e6 / Math.max(1, r.commits())).toList());
            double client = Percentiles.median(side.stream().map(TxRound::clientCpuMicrosPerTx).toList());
            t.row(mode.label, Table.rate(tps),
                    Table.ratio(tps / tpsOf.getOrDefault(TxMode.NONE, Double.NaN)), us(cpu), us(client), Table.ms(Percentiles.of(lat, 50)), Table.ms(Percentiles.of(lat, 99)),
                    Table.ms(Percentiles.of(lat, 100)), late, missing);
            Map<String, Object> s = new LinkedHashMap<>();
            s.put("tps_median", Math.round(tps));
            s.put("server_cpu_us_per_tx_median", Bench.round(cpu, 1));
            s.put("client_cpu_us_per_tx_median", Bench.round(client, 1));
            s.put("latency_p50_ms", Bench.round(Percentiles.of(lat, 50), 3));
            s.put("latency_p99_ms", Bench.round(Percentiles.of(lat, 99), 3));
            s.put("latency_max_ms", Bench.round(Percentiles.of(lat, 100), 3));
            s.put("latency_over_100ms", late);
            s.put("not_handed_out", missing);
            summary.put(mode.key, s);
        }
        ratio(summary, "tps_ratio_channel_over_polling", tpsOf, TxMode.CHANNEL, TxMode.POLLING);
        ratio(summary, "tps_ratio_channel_over_none", tpsOf, TxMode.CHANNEL, TxMode.NONE);
        ratio(summary, "tps_ratio_channel_floor_10ms_over_none", tpsOf, TxMode.CHANNEL_FLOOR, TxMode.NONE);
        ratio(summary, "tps_ratio_announced_over_none", tpsOf, TxMode.ANNOUNCED, TxMode.NONE);
        ratio(summary, "tps_ratio_announced_floor_10ms_over_none", tpsOf, TxMode.ANNOUNCED_FLOOR, TxMode.NONE);
        ratio(summary, "tps_ratio_unheard_over_polling", tpsOf, TxMode.UNHEARD, TxMode.POLLING);
        summary.put("warmup_passes", warmupPasses);
        summary.put("warmup_settled", settled);
        summary.put("rounds", rows);
        results.put("txenqueue", summary);
        t.note("Each transaction: BEGIN; INSERT INTO " + Fleet.BUSINESS_TABLE + "; enqueue(connection, [one entry]); COMMIT,"
                + " on its own pooled connection, back to back. The consumer (claimStream, poll 1 s, listener on the"
                + " channel; it completes what it was handed every " + o.txCompleteMillis + " ms, at most 100 keys at once)"
                + " runs in every mode; without a channel only its poll and follow-up claims find work. Both queues'"
                + " minWakeInterval is 1 ms but in the modes named for 10 ms: the notifier announces and the consumer"
                + " wakes at most once per 10 ms. The bracketed modes run each transaction inside"
                + " ReactiveWorkQueue.announceAfterCommit, so the notifier asks the database about no transaction and the"
                + " bracket reports each commit; the others hand each transaction's id over to be asked about. The"
                + " polling mode polls every 10 ms instead of listening: it consumes about as promptly as the channel"
                + " does, with no NOTIFY at all, so channel ÷ polling is what the notifications cost beyond prompt"
                + " consumption. The unheard mode sends them (the producer's queue has the channel) but its consumer"
                + " polls every 10 ms and does not listen, so unheard ÷ polling is what the notifier costs alone, and"
                + " channel ÷ unheard what the consumer's reactions to them cost. Client CPU:"
                + " this JVM (enqueuers, notifier, consumer, listener). Latency: COMMIT returned in the enqueuer → item"
                + " emitted by claimStream, same JVM. Before the measured rounds, " + warmupPasses + " untimed pass(es) over"
                + " every mode, until a pass in which no round kept the JIT compiling for more than "
                + Math.round(FleetMember.JIT_SETTLED_SHARE * 100) + " % of it (" + (settled ? "settled" : "not settled by then")
                + ").");
        tables.add(t);
        t.print();
        channelTargets(targets, tpsOf, latenciesOf, TxMode.CHANNEL, "Transactional enqueue with a channel ≥ 0.9× without (tps)");
        tpsTarget(targets, "… the same against a consumer as prompt without NOTIFY (10 ms poll; not in the issue)", tpsOf,
                TxMode.CHANNEL, TxMode.POLLING);
        tpsTarget(targets, "… the notifier alone: its notifications unheard, against the same 10 ms poll (not in the issue)",
                tpsOf, TxMode.UNHEARD, TxMode.POLLING);
        channelTargets(targets, tpsOf, latenciesOf, TxMode.CHANNEL_FLOOR,
                "Transactional enqueue with a channel and both queues' minWakeInterval 10 ms ≥ 0.9× without (tps)");
        channelTargets(targets, tpsOf, latenciesOf, TxMode.ANNOUNCED,
                "Transactional enqueue with a channel, transactions bracketed (announceAfterCommit), ≥ 0.9× without (tps)");
        channelTargets(targets, tpsOf, latenciesOf, TxMode.ANNOUNCED_FLOOR,
                "Transactional enqueue with a channel, bracketed, minWakeInterval 10 ms, ≥ 0.9× without (tps)");
    }

    /** The three targets for one channel mode, when it and the baseline ran. */
    private static void channelTargets(List<Map<String, Object>> targets, Map<TxMode, Double> tpsOf,
            Map<TxMode, List<Double>> latenciesOf, TxMode mode, String title) {
        if (!tpsOf.containsKey(mode) || !tpsOf.containsKey(TxMode.NONE)) {
            return;
        }
        tpsTarget(targets, title, tpsOf, mode, TxMode.NONE);
        List<Double> latencies = latenciesOf.get(mode);
        double p50 = Percentiles.of(latencies, 50);
        double max = Percentiles.of(latencies, 100);
        targets.add(Fleet.target("… its wakeups arrive: commit → handed out p50 ≤ 10 ms",
                "p50 " + Table.ms(p50) + " ms, p99 " + Table.ms(Percentiles.of(latencies, 99)) + " ms", p50, 10, false));
        targets.add(Fleet.target("… all within 100 ms", "max " + Table.ms(max) + " ms of " + latencies.size() + " keys",
                max, 100, false));
    }

    /** The target "{@code a} ≥ 0.9× {@code b} in median tps", when both modes ran. */
    private static void tpsTarget(List<Map<String, Object>> targets, String title, Map<TxMode, Double> tpsOf, TxMode a,
            TxMode b) {
        if (tpsOf.containsKey(a) && tpsOf.containsKey(b)) {
            targets.add(Fleet.target(title, Table.rate(tpsOf.get(a)) + " vs " + Table.rate(tpsOf.get(b)) + " tps",
                    tpsOf.get(a) / tpsOf.get(b), 0.9, true));
        }
    }

    /** {@code a ÷ b} of the medians into {@code summary}, when both modes ran. */
    private static void ratio(Map<String, Object> summary, String name, Map<TxMode, Double> tpsOf, TxMode a, TxMode b) {
        if (tpsOf.containsKey(a) && tpsOf.containsKey(b)) {
            summary.put(name, Bench.round(tpsOf.get(a) / tpsOf.get(b), 3));
        }
    }

    private TxRound txRound(Fleet.Options o, ConnectionPool enqueuers, ConnectionPool consumers, PgNotificationListener listener,
            TxMode mode, int round, int seconds) throws InterruptedException {
        boolean channel = mode.notifies;
        db.exec("TRUNCATE " + Fleet.BUSINESS_TABLE);
        WorkQueueConfig.Builder config = WorkQueueConfig.builder("tx-" + mode.key + "-" + round + "-"
                + System.nanoTime()).tablePrefix(Fleet.TX_PREFIX).minWakeInterval(mode.wakeFloor);
        if (channel) {
            config.notifyChannel(Fleet.TX_CHANNEL);
        }
        WorkQueueConfig built = config.build();
        ReactiveWorkQueue<String> producer = ReactiveWorkQueue.builder(enqueuers, String.class).config(built).build();
        ReactiveWorkQueue<String> consumer = ReactiveWorkQueue.builder(consumers, String.class).config(built)
                .wakeups(mode == TxMode.UNHEARD ? Flux.never() : listener.wakeups()).build();
        Map<String, Long> committedAt = new ConcurrentHashMap<>();
        Map<String, Long> handedOutAt = new ConcurrentHashMap<>();
        Disposable consuming = consumer.claimStream(Duration.ofMinutes(1), mode.poll)
                .doOnNext(item -> handedOutAt.putIfAbsent(item.key(), System.nanoTime()))
                .bufferTimeout(100, Duration.ofMillis(o.txCompleteMillis), true)
                .concatMap(items -> consumer.complete(items.stream().map(Item::key).toList()), 1)
                .subscribe(n -> { }, e -> System.err.println("tx consumer failed: " + e));
        Mono.delay(Duration.ofMillis(300)).block(); // the stream's first claim and wait, the listener's session
        AtomicLong sequence = new AtomicLong();
        AtomicLong failures = new AtomicLong();
        String insert = "INSERT INTO " + Fleet.BUSINESS_TABLE + " (ref) VALUES ($1)";
        flushEarlierWrites();
        CpuMeter.Snapshot before = CpuMeter.take();
        long self = ProcessHandle.current().pid();
        double clientBefore = CpuMeter.processSeconds(self);
        long jitBefore = FleetMember.jitMillis();
        long start = System.nanoTime();
        long deadline = start + TimeUnit.SECONDS.toNanos(seconds);
        Flux.range(0, o.txCallers)
                .flatMap(caller -> Mono.defer(() -> {
                            String key = "r" + round + "-" + sequence.incrementAndGet();
                            return Mono.usingWhen(enqueuers.create(),
                                    (Connection c) -> mode.bracket(Mono.from(c.beginTransaction())
                                            .then(Flux.from(c.createStatement(insert).bind("$1", key).execute())
                                                    .concatMap(r -> r.getRowsUpdated()).then())
                                            .then(producer.enqueue(c, List.of(Entry.of(key))))
                                            .then(Mono.from(c.commitTransaction())))
                                            .doOnSuccess(v -> committedAt.put(key, System.nanoTime())),
                                    Connection::close,
                                    (c, e) -> Mono.from(c.rollbackTransaction()).onErrorResume(x -> Mono.empty())
                                            .then(Mono.from(c.close())),
                                    Connection::close)
                                    .onErrorResume(e -> {
                                        if (failures.incrementAndGet() <= 3) {
                                            System.err.println("business transaction failed: " + e);
                                        }
                                        return Mono.empty();
                                    });
                        })
                        .repeat(() -> System.nanoTime() < deadline), o.txCallers)
                .blockLast();
        double elapsed = (System.nanoTime() - start) / 1e9;
        CpuMeter.Use cpu = CpuMeter.take().since(before);
        double clientMicrosPerTx = (CpuMeter.processSeconds(self) - clientBefore) * 1e6 / Math.max(1, committedAt.size());
        // Compiling is this JVM's CPU too: a mode that keeps the JIT busier pays for it here.
        long jitMillis = FleetMember.jitMillis() - jitBefore;
        // Let the consumer hand out what was committed last (at most its poll, plus slack).
        long waitUntil = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (handedOutAt.size() < committedAt.size() && System.nanoTime() < waitUntil) {
            Thread.sleep(10);
        }
        consuming.dispose();
        producer.close().block(Duration.ofSeconds(30));
        consumer.close().block(Duration.ofSeconds(30));
        List<Double> latencies = new ArrayList<>(committedAt.size());
        long missing = 0;
        for (Map.Entry<String, Long> e : committedAt.entrySet()) {
            Long out = handedOutAt.get(e.getKey());
            if (out == null) {
                missing++;
            } else {
                latencies.add((out - e.getValue()) / 1e6);
            }
        }
        TxRound r = new TxRound(mode, round, committedAt.size(), failures.get(), elapsed, cpu, clientMicrosPerTx, latencies,
                missing, jitMillis);
        System.out.printf(Locale.ROOT, "  %stx enqueue %-10s %7d commits in %5.2f s = %7.0f tps, server %5.1f µs/tx, client %5.1f µs/tx;"
                        + " commit → handed out p50 %6.2f p99 %7.2f max %7.2f ms, %d never handed out; JIT %d ms%s%n",
                round == 0 ? "(warm-up) " : "", mode.key, r.commits(), elapsed, r.tps(),
                cpu.serverSeconds() * 1e6 / Math.max(1, r.commits()), clientMicrosPerTx, Percentiles.of(latencies, 50),
                Percentiles.of(latencies, 99), Percentiles.of(latencies, 100), missing, jitMillis,
                failures.get() > 0 ? ", " + failures.get() + " failed" : "");
        return r;
    }

    // ------------------------------------------------------------------ 3. housekeeping

    void housekeeping(Fleet.Options o, Map<String, Object> results, List<Table> tables, List<Map<String, Object>> targets)
            throws Exception {
        System.out.println();
        System.out.printf(Locale.ROOT, "== 3. Housekeeping: P = %s instances, one round each per %d ms interval, %d intervals,"
                        + " on a queue with %,d pending and %,d completed rows (%s)%n", o.hkProcesses, o.hkIntervalMillis,
                o.hkIntervals, o.hkPending, o.hkCompleted, FleetMember.HOUSEKEEPING);
        db.migrate(Fleet.HK_PREFIX);
        List<Map<String, Object>> rows = new ArrayList<>();
        Table t = new Table(String.format(Locale.ROOT, "3. Housekeeping, CPU per %d ms interval (%s)", o.hkIntervalMillis,
                FleetMember.HOUSEKEEPING), "instances", "server CPU ms/interval", "÷ P=1", "own sessions ms/interval", "÷ P=1",
                "rows reaped", "rounds run", "ticks skipped", "round p50 ms (median of members)");
        // P = 1 and P = 8 alternate, each repeat starting with the other, so a drift in the machine's
        // speed falls on both (single runs of the same code put the ratio anywhere from 1.10 to 1.62);
        // the ratio is of the medians.
        List<HkRun> runs = new ArrayList<>();
        for (int repeat = 1; repeat <= o.hkRepeat; repeat++) {
            List<Integer> order = new ArrayList<>(o.hkProcesses);
            if (repeat % 2 == 0) {
                Collections.reverse(order);
            }
            for (int p : order) {
                runs.add(housekeepingRun(o, p, repeat));
            }
        }
        runs.sort(Comparator.comparingInt(HkRun::instances).thenComparingInt(HkRun::repeat));
        Map<Integer, double[]> medians = new LinkedHashMap<>();
        for (int p : o.hkProcesses) {
            List<HkRun> side = runs.stream().filter(r -> r.instances() == p).toList();
            medians.put(p, new double[] {Percentiles.median(side.stream().map(HkRun::serverMs).toList()),
                    Percentiles.median(side.stream().map(HkRun::sessionMs).toList())});
        }
        int first = o.hkProcesses.get(0);
        int top = o.hkProcesses.get(o.hkProcesses.size() - 1);
        double[] base = medians.get(first);
        for (HkRun r : runs) {
            t.row(o.hkRepeat > 1 ? r.instances() + " (run " + r.repeat() + ")" : r.instances(),
                    String.format(Locale.ROOT, "%.0f", r.serverMs()), Table.ratio(r.serverMs() / base[0]),
                    String.format(Locale.ROOT, "%.0f", r.sessionMs()), Table.ratio(r.sessionMs() / base[1]), r.reaped(),
                    r.rounds(), r.skipped(), Table.ms(r.roundP50()));
            rows.add(r.row(o));
        }
        if (o.hkRepeat > 1) {
            for (int p : o.hkProcesses) {
                double[] median = medians.get(p);
                t.row(p + " (median)", String.format(Locale.ROOT, "%.0f", median[0]), Table.ratio(median[0] / base[0]),
                        String.format(Locale.ROOT, "%.0f", median[1]), Table.ratio(median[1] / base[1]), "", "", "", "");
            }
        }
        double[] last = medians.get(top);
        Report.csv(out(o, "housekeeping.csv"), rows);
        Map<String, Object> hk = new LinkedHashMap<>();
        hk.put("implementation", FleetMember.HOUSEKEEPING);
        hk.put("runs", rows);
        Map<String, Object> medianOf = new LinkedHashMap<>();
        medians.forEach((p, median) -> {
            Map<String, Object> m = new LinkedHashMap<>(); // Map.of's order changes from run to run
            m.put("server_cpu_ms_per_interval", Bench.round(median[0], 1));
            m.put("own_sessions_cpu_ms_per_interval", Bench.round(median[1], 1));
            medianOf.put(String.valueOf(p), m);
        });
        hk.put("medians_by_instances", medianOf);
        results.put("housekeeping", hk);
        t.note("Each instance is a JVM of its own running FleetMember.housekeepOnce at every tick (the starter's schedule:"
                + " a tick during a round is skipped), after four untimed rounds (two at a time, so both sessions of its"
                + " pool have run them, as a long-running service's have; the first member to run one keeps house)."
                + " Completed rows are spread evenly over the 1 h retention, so rows come"
                + " due for reaping at a steady rate; two reap batches are due at the start. "
                + (o.hkSpread ? "The members' schedules are spread: member i ticks first at i/P of an interval after go, as"
                        + " instances started at different times do (the window grows by up to an interval at P > 1). "
                        : "The members' schedules are aligned: every member ticks first at go. ")
                + "CPU per interval = CPU from go until every instance finished its schedule ÷ intervals. Each P runs "
                + o.hkRepeat + " time(s),"
                + " alternating which P goes first; ÷ P=1 is against P = 1's median, and the target compares medians.");
        tables.add(t);
        t.print();
        targets.add(Fleet.target(String.format(Locale.ROOT, "Housekeeping database CPU per interval at P = %d ≤ 1.2× P = %d",
                        top, first),
                String.format(Locale.ROOT, "%.0f vs %.0f ms (own sessions %.0f vs %.0f ms)", last[0], base[0], last[1], base[1]),
                last[0] / base[0], 1.2, false));
        targets.add(Fleet.target("… the same, own sessions only (not in the issue: robust to a shared server)",
                String.format(Locale.ROOT, "%.0f vs %.0f ms", last[1], base[1]), last[1] / base[1], 1.2, false));
    }

    /** One housekeeping run of {@code instances} members. */
    private record HkRun(int instances, int repeat, double serverMs, double sessionMs, long reaped, long rounds,
            long skipped, double roundP50, double wallSeconds, double machineBusy, long dueAtSetup) {
        /** The run as housekeeping.csv and results.json record it. */
        Map<String, Object> row(Fleet.Options o) {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("instances", instances);
            row.put("repeat", repeat);
            row.put("intervals", o.hkIntervals);
            row.put("interval_ms", o.hkIntervalMillis);
            row.put("wall_seconds", Bench.round(wallSeconds, 2));
            row.put("server_cpu_ms_per_interval", Bench.round(serverMs, 1));
            row.put("own_sessions_cpu_ms_per_interval", Bench.round(sessionMs, 1));
            row.put("machine_busy", Bench.round(machineBusy, 3));
            row.put("due_at_setup", dueAtSetup);
            row.put("rows_reaped", reaped);
            row.put("rounds_run", rounds);
            row.put("ticks_skipped", skipped);
            row.put("round_ms_p50_median", Bench.round(roundP50, 2));
            return row;
        }
    }

    private HkRun housekeepingRun(Fleet.Options o, int p, int repeat) throws Exception {
        String table = WorkQueueMigrations.tableName(Fleet.HK_PREFIX);
        // No keeper carried over from the last P: its lease would outlive its JVM by up to 1.25
        // intervals, and these members would keep nobody's house until it ended.
        db.exec("DELETE FROM " + Fleet.HK_PREFIX + "_work_queue_queues WHERE queue_name = '" + Fleet.HK_QUEUE + "'");
        List<Fleet.Member> members = new ArrayList<>();
        for (int i = 0; i < p; i++) {
            members.add(new Fleet.Member("hk-" + p + "." + i, Fleet.javaMember(database, "housekeep", p + "." + i,
                    Fleet.HK_PREFIX, Fleet.HK_QUEUE, String.valueOf(o.hkIntervalMillis), String.valueOf(o.hkIntervals),
                    String.valueOf(Fleet.HK_RETENTION.toSeconds()), String.valueOf(o.hkPhaseMillis(i, p)))));
        }
        // The history is built once the members are ready, not before they start: it ages (rows pass the
        // retention) from the moment it is built, and eight JVMs take longer to start than one, so a
        // history built first gave P = 8 about a fifth more rows to reap (24,737 against 20,450).
        long[] due = new long[1];
        long[] completedBefore = new long[1];
        Measured m = measure(members, database, 0, (int) ((long) o.hkIntervalMillis * o.hkIntervals / 1000) + 120,
                Duration.ofMinutes(3), () -> {
                    due[0] = fillHistory(o);
                    completedBefore[0] = db.queryLong("SELECT count(*) FROM " + table + " WHERE completed_at IS NOT NULL");
                });
        if (m == null) {
            throw new IllegalStateException("housekeeping members did not start");
        }
        long reaped = completedBefore[0] - db.queryLong("SELECT count(*) FROM " + table + " WHERE completed_at IS NOT NULL");
        long rounds = 0;
        long skipped = 0;
        List<Double> roundP50 = new ArrayList<>();
        for (Map<String, Object> report : m.reports()) {
            rounds += report.get("rounds") instanceof Number n ? n.longValue() : 0;
            skipped += report.get("skipped") instanceof Number n ? n.longValue() : 0;
            if (report.get("round_ms_p50") instanceof Number n) {
                roundP50.add(n.doubleValue());
            }
        }
        double serverMs = m.cpu().serverSeconds() * 1e3 / o.hkIntervals;
        double sessionMs = m.sessionSeconds() * 1e3 / o.hkIntervals;
        System.out.printf(Locale.ROOT, "  housekeeping P=%d (run %d): server %.0f ms/interval (own sessions %.0f), %d rows reaped,"
                + " %d rounds run, %d ticks skipped%n", p, repeat, serverMs, sessionMs, reaped, rounds, skipped);
        return new HkRun(p, repeat, serverMs, sessionMs, reaped, rounds, skipped, Percentiles.median(roundP50),
                m.cpu().wallSeconds(), m.cpu().machineBusy(), due[0]);
    }

    /**
     * Refills the housekeeping table: pending rows, and completed rows whose completion times are
     * spread evenly over the retention (so reaping has a steady trickle), plus two reap batches
     * already past it. Returns how many were due at the end of the setup.
     */
    private long fillHistory(Fleet.Options o) {
        String table = WorkQueueMigrations.tableName(Fleet.HK_PREFIX);
        long retentionSeconds = Fleet.HK_RETENTION.toSeconds();
        int dueNow = 2 * WorkQueueConfig.builder(Fleet.HK_QUEUE).build().reapBatchSize();
        String q = "'" + Fleet.HK_QUEUE + "'";
        db.exec("TRUNCATE " + table,
                "INSERT INTO " + table + " (queue_name, item_key, enqueued_at, available_at) SELECT " + q
                        + ", 'p' || lpad(g::text, 8, '0'), now() - interval '1 minute', now() - interval '1 minute'"
                        + " FROM generate_series(1, " + o.hkPending + ") g",
                "INSERT INTO " + table + " (queue_name, item_key, attempts, enqueued_at, available_at, completed_at)"
                        + " SELECT " + q + ", 'c' || lpad(g::text, 8, '0'), 1, t - interval '1 second', t - interval '1 second', t"
                        + " FROM (SELECT g, now() - " + retentionSeconds + " * interval '1 second' * g / " + o.hkCompleted
                        + " AS t FROM generate_series(1, " + o.hkCompleted + ") g) x",
                "INSERT INTO " + table + " (queue_name, item_key, attempts, enqueued_at, available_at, completed_at)"
                        + " SELECT " + q + ", 'd' || lpad(g::text, 8, '0'), 1, now() - interval '2 hours', now() - interval '2 hours',"
                        + " now() - " + retentionSeconds + " * interval '1 second' - g * interval '1 millisecond'"
                        + " FROM generate_series(1, " + dueNow + ") g",
                "VACUUM ANALYZE " + table);
        return db.queryLong("SELECT count(*) FROM " + table + " WHERE completed_at < now() - " + retentionSeconds
                + " * interval '1 second'");
    }

    // ------------------------------------------------------------------ 4. wake

    @SuppressWarnings("unchecked")
    void wake(Fleet.Options o, Map<String, Object> results, List<Table> tables, List<Map<String, Object>> targets)
            throws Exception {
        System.out.println();
        System.out.printf(Locale.ROOT, "== 4. Wake latency: %d enqueues %d ms apart to an idle claimStream worker%n",
                o.wakeSamples, o.wakeGapMillis);
        List<WakeLatency.Mode> modes = List.of(
                new WakeLatency.Mode("listener, minWakeInterval 1 ms", "listener_floor_1ms", true, Duration.ofMillis(1),
                        Duration.ofSeconds(1)),
                new WakeLatency.Mode("listener, default config (minWakeInterval 100 ms)", "listener_default", true,
                        Duration.ofMillis(100), Duration.ofSeconds(1)));
        // Today's numbers: the suite's committed run (another run; a reference, not a same-run baseline).
        Map<String, Double> todayP99 = new LinkedHashMap<>();
        Path suite = repo.resolve("docs/benchmarks/results.json");
        if (Files.exists(suite)) {
            Map<String, Object> committed = new ObjectMapper().readValue(suite.toFile(), Map.class);
            if (committed.get("wake") instanceof List<?> list) {
                for (Object row : list) {
                    Map<String, Object> r = (Map<String, Object>) row;
                    todayP99.put(String.valueOf(r.get("mode")), Bench.num(r, "p99_ms"));
                }
            }
        }
        String app = "fleet-wake";
        ConnectionPool pool = db.pool(app, 4);
        List<WakeLatency.Result> measured = new ArrayList<>();
        try {
            for (WakeLatency.Mode mode : modes) {
                measured.add(WakeLatency.measure(db.factory(app + "-listener"), pool, mode, o.wakeSamples,
                        Duration.ofMillis(o.wakeGapMillis)));
            }
        } finally {
            db.dispose(pool, app);
        }
        Table t = new Table("4. Wake latency, enqueue → claimed by an idle worker (ms)", "mode", "p50", "p90", "p99", "max",
                "today's p99 (docs/benchmarks)", "p99 ÷ today");
        List<Map<String, Object>> rows = new ArrayList<>();
        for (WakeLatency.Result r : measured) {
            double today = todayP99.getOrDefault(r.mode().id(), Double.NaN);
            t.row(r.mode().label(), Table.ms(r.p(50)), Table.ms(r.p(90)), Table.ms(r.p(99)), Table.ms(r.p(100)),
                    Double.isNaN(today) ? "—" : Table.ms(today), Table.ratio(r.p(99) / today));
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("mode", r.mode().id());
            row.put("samples", r.samples());
            row.put("gap_ms", o.wakeGapMillis);
            row.put("p50_ms", Bench.round(r.p(50), 3));
            row.put("p90_ms", Bench.round(r.p(90), 3));
            row.put("p99_ms", Bench.round(r.p(99), 3));
            row.put("max_ms", Bench.round(r.p(100), 3));
            row.put("today_p99_ms", Double.isNaN(today) ? null : today);
            rows.add(row);
        }
        Report.csv(out(o, "wake.csv"), rows);
        results.put("wake", rows);
        t.note("As the suite's scenario 3 (WakeLatency.measure). Today's p99 is read from the committed suite results"
                + " (docs/benchmarks/results.json): another run at another time, so the ratio is a reference only.");
        tables.add(t);
        t.print();
        WakeLatency.Result best = measured.get(0);
        double today = todayP99.getOrDefault(best.mode().id(), Double.NaN);
        targets.add(Fleet.target("Wake latency p99 no worse than today's (" + best.mode().label() + ")",
                "p50 " + Table.ms(best.p(50)) + " ms, p99 " + Table.ms(best.p(99)) + " ms vs today's p99 "
                        + (Double.isNaN(today) ? "unknown" : Table.ms(today) + " ms"),
                best.p(99) / today, 1.0, false));
    }

    // ------------------------------------------------------------------ helpers

    private static String us(double micros) {
        return Double.isNaN(micros) ? "—" : String.format(Locale.ROOT, "%.1f", micros);
    }

    private static Path out(Fleet.Options o, String file) throws IOException {
        Files.createDirectories(o.out);
        return o.out.resolve(file);
    }
}
