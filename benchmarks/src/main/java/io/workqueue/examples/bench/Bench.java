package io.workqueue.examples.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.r2dbc.pool.ConnectionPool;
import io.workqueue.migrations.WorkQueueMigrations;
import java.awt.Color;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The benchmark suite of issue #5, against the local PostgreSQL: drain, enqueue under concurrency,
 * wake latency, claim cost versus history, heap bounded by demand, and Graphile Worker as the peer.
 * Each scenario runs its baselines in the same run and prints a table with ratios; the results go
 * to {@code results.json}, one CSV per scenario, PNG charts and a README in the output folder.
 *
 * <p>Run it through {@code benchmarks/run.sh} (which builds everything first); {@code --help}
 * lists the options.
 */
public final class Bench {
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    /** Command-line options; {@code --quick} changes the defaults only. */
    static final class Options {
        boolean quick;
        int n = 200_000;
        int drainSeconds = 6;
        List<Integer> workers = List.of(1, 4, 16);
        List<Integer> batches = List.of(1, 10, 100);
        int repeat = 1;
        int targetRepeat = 3;
        int targetWorkers = 4;
        int enqueueSeconds = 5;
        int enqueuePool = 16;
        List<Integer> callers = List.of(1, 64, 1000, 5000);
        int wakeSamples = 1000;
        int wakeGapMillis = 10;
        int historySmall = 10_000;
        int historyLarge = 1_000_000;
        int historyReady = 10_000;
        int historyClaims = 300;
        int heapN = 1_000_000;
        int heapInFlight = 256;
        int heapItemMillis = 20;
        int heapSeconds = 240;
        Integer peerN;
        int peerRuns = 2;
        Set<String> scenarios = new LinkedHashSet<>(List.of("drain", "peer", "enqueue", "wake", "history", "heap"));
        Path out;

        static Options parse(String[] args, Path repo) {
            Options o = new Options();
            List<String> list = Arrays.asList(args);
            if (list.contains("--quick")) {
                o.quick = true;
                o.n = 20_000;
                o.drainSeconds = 3;
                o.targetRepeat = 1;
                o.enqueueSeconds = 2;
                o.wakeSamples = 200;
                o.historyLarge = 100_000;
                o.historyClaims = 100;
                o.heapN = 100_000;
                o.heapSeconds = 60;
                o.drainSeconds = 2;
                o.peerRuns = 1;
            }
            for (int i = 0; i < args.length; i++) {
                String a = args[i];
                switch (a) {
                    case "--quick" -> { }
                    case "--n" -> o.n = Integer.parseInt(args[++i]);
                    case "--drain-seconds" -> o.drainSeconds = Integer.parseInt(args[++i]);
                    case "--workers" -> o.workers = ints(args[++i]);
                    case "--batches" -> o.batches = ints(args[++i]);
                    case "--repeat" -> o.repeat = Integer.parseInt(args[++i]);
                    case "--target-repeat" -> o.targetRepeat = Integer.parseInt(args[++i]);
                    case "--enqueue-seconds" -> o.enqueueSeconds = Integer.parseInt(args[++i]);
                    case "--enqueue-pool" -> o.enqueuePool = Integer.parseInt(args[++i]);
                    case "--callers" -> o.callers = ints(args[++i]);
                    case "--wake-samples" -> o.wakeSamples = Integer.parseInt(args[++i]);
                    case "--wake-gap-ms" -> o.wakeGapMillis = Integer.parseInt(args[++i]);
                    case "--history-large" -> o.historyLarge = Integer.parseInt(args[++i]);
                    case "--history-claims" -> o.historyClaims = Integer.parseInt(args[++i]);
                    case "--heap-n" -> o.heapN = Integer.parseInt(args[++i]);
                    case "--heap-seconds" -> o.heapSeconds = Integer.parseInt(args[++i]);
                    case "--peer-n" -> o.peerN = Integer.parseInt(args[++i]);
                    case "--peer-runs" -> o.peerRuns = Integer.parseInt(args[++i]);
                    case "--only" -> o.scenarios = new LinkedHashSet<>(Arrays.asList(args[++i].split(",")));
                    case "--skip" -> o.scenarios.removeAll(Arrays.asList(args[++i].split(",")));
                    case "--out" -> o.out = Path.of(args[++i]);
                    case "--help", "-h" -> {
                        usage();
                        System.exit(0);
                    }
                    default -> throw new IllegalArgumentException("unknown option " + a + " (try --help)");
                }
            }
            if (o.out == null) {
                o.out = o.quick ? repo.resolve("benchmarks/target/bench-quick") : repo.resolve("docs/benchmarks");
            }
            return o;
        }

        private static List<Integer> ints(String csv) {
            return Arrays.stream(csv.split(",")).map(String::trim).map(Integer::parseInt).toList();
        }

        Map<String, Object> toMap() {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("mode", quick ? "quick" : "full");
            m.put("drain_n", n);
            m.put("drain_cap_seconds", drainSeconds);
            m.put("drain_workers", workers);
            m.put("drain_batches", batches);
            m.put("drain_repeat", repeat);
            m.put("drain_repeat_at_target_workers", targetRepeat);
            m.put("enqueue_seconds", enqueueSeconds);
            m.put("enqueue_pool_size", enqueuePool);
            m.put("enqueue_callers", callers);
            m.put("wake_samples", wakeSamples);
            m.put("wake_gap_ms", wakeGapMillis);
            m.put("history_completed_rows", List.of(historySmall, historyLarge));
            m.put("history_ready_rows", historyReady);
            m.put("history_claims", historyClaims);
            m.put("heap_backlog", heapN);
            m.put("heap_in_flight", heapInFlight);
            m.put("heap_item_ms", heapItemMillis);
            m.put("heap_cap_seconds", heapSeconds);
            m.put("scenarios", scenarios);
            return m;
        }
    }

    private static void usage() {
        System.out.println("""
                benchmarks/run.sh [--quick] [options]
                  --quick                 small sizes (~3-5 min); results go to benchmarks/target/bench-quick
                  --out DIR               where results go (default docs/benchmarks, or the quick folder)
                  --only a,b / --skip a,b scenarios: drain, peer, enqueue, wake, history, heap
                  --n N                   drain preload (200000)            --drain-seconds S  cap per drain run (6)
                  --workers 1,4,16        --batches 1,10,100                --repeat R         runs per drain cell (1)
                  --target-repeat R       runs per drain cell at W=4, median reported (3)
                  --enqueue-seconds S (5) --callers 1,64,1000,5000          --enqueue-pool P   pool size (16)
                  --wake-samples S (1000) --wake-gap-ms G (10)
                  --history-large N (1000000)  --history-claims K (300)
                  --heap-n N (1000000)    --heap-seconds S (240)            --peer-n N         (defaults to --n)
                  --peer-runs R           1 = after the drain grid, 2 = before and after, mean reported (2)
                """);
    }

    public static void main(String[] args) throws Exception {
        Path repo = Path.of(System.getProperty("bench.repo", ".")).toAbsolutePath().normalize();
        Options o = Options.parse(args, repo);
        Db db = Db.fromEnvironment(System.getProperty("bench.database", "bench"));
        db.dropQueueTables();
        Files.createDirectories(o.out);
        long suiteStart = System.nanoTime();

        Map<String, Object> results = new LinkedHashMap<>();
        Map<String, Object> machine = Machine.describe(db, repo);
        results.put("machine", machine);
        results.put("config", o.toMap());
        System.out.println("reactive-workqueue benchmarks (" + (o.quick ? "quick" : "full") + ") against " + db.url());
        machine.forEach((k, v) -> System.out.println("  " + k + ": " + v));

        List<Table> tables = new ArrayList<>();
        List<Map<String, Object>> targets = new ArrayList<>();
        Map<String, Object> peer = null;
        Map<String, Map<String, Double>> drainMedians = null;

        // The peer runs before and after the drain grid in a full run (once in a quick run), and its mean is the
        // denominator of the drain target, so slow drift in the machine's load falls on both sides.
        List<Map<String, Object>> peerRuns = new ArrayList<>();
        boolean runPeer = o.scenarios.contains("peer");
        if (runPeer && o.peerRuns > 1) {
            peerRuns.add(peer(o, db, repo));
        }
        if (o.scenarios.contains("drain")) {
            long t = System.nanoTime();
            drainMedians = drain(o, db, repo, results, tables);
            System.out.printf(Locale.ROOT, "drain took %.0f s%n", (System.nanoTime() - t) / 1e9);
        }
        if (runPeer) {
            peerRuns.add(peer(o, db, repo));
            peer = combine(peerRuns);
            results.put("peer", peer);
            results.put("peer_runs", peerRuns);
        }
        if (drainMedians != null) {
            tables.add(drainTable(o, drainMedians, peer));
            tables.get(tables.size() - 1).print();
            tables.add(cpuTable(o, results, peer));
            tables.get(tables.size() - 1).print();
            drainTargets(o, drainMedians, peer, targets);
            drainChart(o, drainMedians, peer);
        } else if (peer != null) {
            Table t = new Table("6. Peer: Graphile Worker", "peer", "version", "items", "drain items/s", "bulk add items/s");
            if (!Boolean.TRUE.equals(peer.get("skipped"))) {
                t.row("graphile-worker", peer.get("version"), peer.get("n"), Table.rate(num(peer, "drain_items_per_s")),
                        Table.rate(num(peer, "add_items_per_s")));
            } else {
                t.row("graphile-worker", "skipped: " + peer.get("reason"), "", "", "");
            }
            tables.add(t);
            t.print();
        }
        if (o.scenarios.contains("enqueue")) {
            long t = System.nanoTime();
            enqueue(o, db, results, tables, targets, peer);
            System.out.printf(Locale.ROOT, "enqueue took %.0f s%n", (System.nanoTime() - t) / 1e9);
        }
        if (o.scenarios.contains("wake")) {
            long t = System.nanoTime();
            wake(o, db, repo, results, tables, targets);
            System.out.printf(Locale.ROOT, "wake took %.0f s%n", (System.nanoTime() - t) / 1e9);
        }
        if (o.scenarios.contains("history")) {
            long t = System.nanoTime();
            history(o, db, results, tables, targets);
            System.out.printf(Locale.ROOT, "history took %.0f s%n", (System.nanoTime() - t) / 1e9);
        }
        if (o.scenarios.contains("heap")) {
            long t = System.nanoTime();
            heap(o, db, results, tables, targets);
            System.out.printf(Locale.ROOT, "heap took %.0f s%n", (System.nanoTime() - t) / 1e9);
        }

        machine.put("load_average_end", Machine.loadAverage());
        double total = (System.nanoTime() - suiteStart) / 1e9;
        machine.put("suite_seconds", Math.round(total));
        results.put("targets", targets);
        Table targetTable = targetTable(targets);
        targetTable.print();
        JSON.writeValue(o.out.resolve("results.json").toFile(), results);
        Report.writeReadme(o, results, targetTable, tables);
        System.out.printf(Locale.ROOT, "%nSuite took %.0f s. Results in %s%n", total, o.out);
    }

    // ------------------------------------------------------------------ 6. peer

    private static Map<String, Object> peer(Options o, Db db, Path repo) {
        long t = System.nanoTime();
        System.out.println();
        System.out.println("== 6. Peer: Graphile Worker batched drain (same server, database bench_graphile)");
        Map<String, Object> peer = Peer.graphileWorker(repo, db, o.peerN != null ? o.peerN : o.n);
        System.out.println("  peer: " + peer);
        System.out.printf(Locale.ROOT, "peer took %.0f s%n", (System.nanoTime() - t) / 1e9);
        return peer;
    }

    /** The runs' mean drain and add rates, with the first successful run's description. */
    private static Map<String, Object> combine(List<Map<String, Object>> runs) {
        List<Map<String, Object>> ok = runs.stream().filter(r -> !Boolean.TRUE.equals(r.get("skipped"))).toList();
        if (ok.isEmpty()) {
            return runs.get(runs.size() - 1);
        }
        Map<String, Object> combined = new LinkedHashMap<>(ok.get(0));
        combined.put("runs", ok.size());
        combined.put("drain_items_per_s", ok.stream().mapToDouble(r -> num(r, "drain_items_per_s")).average().orElse(Double.NaN));
        combined.put("add_items_per_s", ok.stream().mapToDouble(r -> num(r, "add_items_per_s")).average().orElse(Double.NaN));
        combined.put("drain_items_per_s_each", ok.stream().map(r -> Math.round(num(r, "drain_items_per_s"))).toList());
        for (String cpu : List.of("server_cpu_us_per_item", "client_cpu_us_per_item", "machine_busy")) {
            if (ok.stream().allMatch(r -> r.get(cpu) instanceof Number)) {
                combined.put(cpu, ok.stream().mapToDouble(r -> num(r, cpu)).average().orElse(Double.NaN));
            }
        }
        return combined;
    }

    // ------------------------------------------------------------------ 1. drain

    private static Map<String, Map<String, Double>> drain(Options o, Db db, Path repo, Map<String, Object> results,
            List<Table> tables) throws IOException {
        System.out.println();
        System.out.printf(Locale.ROOT, "== 1. Drain: %,d preloaded keys per run, workers %s, batches %s, cap %d s per run%n",
                o.n, o.workers, o.batches, o.drainSeconds);
        // Its scripts are made from the library's statements (Sql.java) for this run.
        Pgbench pgbench = new Pgbench(db);
        Map<String, Object> drain = new LinkedHashMap<>();
        Drain bench = new Drain(db, pgbench, o.n, o.drainSeconds);
        bench.warmUp(o.quick ? 1 : 2);
        List<Drain.Run> runs = new ArrayList<>();
        for (int w : o.workers) {
            for (int b : o.batches) {
                int repeats = w == o.targetWorkers ? Math.max(o.repeat, o.targetRepeat) : o.repeat;
                for (int r = 1; r <= repeats; r++) {
                    for (Drain.Mode mode : Drain.Mode.GRID) {
                        runs.add(bench.run(mode, w, b, r));
                    }
                }
            }
        }
        List<Map<String, Object>> rows = new ArrayList<>();
        for (Drain.Run run : runs) {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("mode", run.mode().id);
            row.put("workers", run.workers());
            row.put("batch", run.batch());
            row.put("repeat", run.repeat());
            row.put("items", run.items());
            row.put("seconds", round(run.seconds(), 3));
            row.put("items_per_s", Math.round(run.itemsPerSecond()));
            row.put("emptied", run.emptied());
            row.put("row_updates", run.updates());
            row.put("hot_updates", run.hotUpdates());
            double[] perItem = run.cpu().microsPerItem(run.items());
            row.put("server_cpu_us_per_item", round(perItem[0], 1));
            row.put("client_cpu_us_per_item", round(perItem[1], 1));
            row.put("machine_busy", round(run.cpu().machineBusy(), 3));
            Drain.Plans plans = run.plans();
            row.put("claim_generic_plans", plans.claimGeneric());
            row.put("claim_custom_plans", plans.claimCustom());
            row.put("complete_generic_plans", plans.completeGeneric());
            row.put("complete_custom_plans", plans.completeCustom());
            row.put("complete_and_claim_generic_plans", plans.completeAndClaimGeneric());
            row.put("complete_and_claim_custom_plans", plans.completeAndClaimCustom());
            rows.add(row);
        }
        drain.put("runs", rows);
        results.put("drain", drain);
        Report.csv(o.out.resolve("drain.csv"), rows);
        // Median per cell and mode.
        Map<String, Map<String, Double>> medians = new LinkedHashMap<>();
        for (Drain.Mode mode : Drain.Mode.GRID) {
            Map<String, Double> byCell = new LinkedHashMap<>();
            for (int w : o.workers) {
                for (int b : o.batches) {
                    List<Double> values = runs.stream()
                            .filter(r -> r.mode() == mode && r.workers() == w && r.batch() == b)
                            .map(Drain.Run::itemsPerSecond).toList();
                    byCell.put(cell(w, b), Percentiles.median(values));
                }
            }
            medians.put(mode.id, byCell);
        }
        drain.put("cpu_at_target_cell", cpuAtTargetCell(o, runs));
        drain.put("median_items_per_s", medians.entrySet().stream().collect(Collectors.toMap(Map.Entry::getKey,
                e -> e.getValue().entrySet().stream().collect(Collectors.toMap(Map.Entry::getKey, x -> Math.round(x.getValue()),
                        (a, b) -> a, LinkedHashMap::new)), (a, b) -> a, LinkedHashMap::new)));
        return medians;
    }

    /** The cell the targets are judged on: W = target workers, B = 100 (or the largest batch). */
    private static int targetBatch(Options o) {
        return o.batches.contains(100) ? 100 : o.batches.get(o.batches.size() - 1);
    }

    /** Per mode, at the target cell, the medians of items/s and of CPU µs per item (server, client) and machine busy. */
    private static Map<String, Map<String, Object>> cpuAtTargetCell(Options o, List<Drain.Run> runs) {
        Map<String, Map<String, Object>> byMode = new LinkedHashMap<>();
        for (Drain.Mode mode : Drain.Mode.GRID) {
            List<Drain.Run> cell = runs.stream().filter(r -> r.mode() == mode && r.workers() == o.targetWorkers
                    && r.batch() == targetBatch(o) && !Double.isNaN(r.cpu().serverSeconds())).toList();
            if (cell.isEmpty()) {
                continue;
            }
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("label", mode.label);
            row.put("items_per_s", Math.round(Percentiles.median(cell.stream().map(Drain.Run::itemsPerSecond).toList())));
            row.put("server_cpu_us_per_item", round(Percentiles.median(
                    cell.stream().map(r -> r.cpu().microsPerItem(r.items())[0]).toList()), 1));
            row.put("client_cpu_us_per_item", round(Percentiles.median(
                    cell.stream().map(r -> r.cpu().microsPerItem(r.items())[1]).toList()), 1));
            row.put("machine_busy", round(Percentiles.median(cell.stream().map(r -> r.cpu().machineBusy()).toList()), 3));
            byMode.put(mode.id, row);
        }
        return byMode;
    }

    /**
     * Where the CPU goes at the target cell: server and client CPU per item, for each mode and for
     * the peer. With every core busy, items/s is bounded by cores ÷ (server + client) per item.
     */
    @SuppressWarnings("unchecked")
    private static Table cpuTable(Options o, Map<String, Object> results, Map<String, Object> peer) {
        Map<String, Object> drain = (Map<String, Object>) results.get("drain");
        Map<String, Map<String, Object>> byMode = (Map<String, Map<String, Object>>) drain.get("cpu_at_target_cell");
        int cores = Runtime.getRuntime().availableProcessors();
        Table t = new Table(String.format(Locale.ROOT, "1b. Where the CPU goes (W=%d B=%d, medians)", o.targetWorkers, targetBatch(o)),
                "mode", "items/s", "server CPU µs/item", "client CPU µs/item", "machine busy",
                "bound: " + cores + " cores ÷ (server + client)");
        List<Map<String, Object>> rows = new ArrayList<>(byMode.values());
        if (peer != null && !Boolean.TRUE.equals(peer.get("skipped")) && peer.get("server_cpu_us_per_item") != null) {
            Map<String, Object> graphile = new LinkedHashMap<>();
            graphile.put("label", "Graphile Worker " + peer.get("version") + " (concurrency " + peer.get("concurrency") + ")");
            graphile.put("items_per_s", num(peer, "drain_items_per_s"));
            graphile.put("server_cpu_us_per_item", num(peer, "server_cpu_us_per_item"));
            graphile.put("client_cpu_us_per_item", num(peer, "client_cpu_us_per_item"));
            graphile.put("machine_busy", num(peer, "machine_busy"));
            rows.add(graphile);
        }
        for (Map<String, Object> row : rows) {
            double server = num(row, "server_cpu_us_per_item");
            double client = num(row, "client_cpu_us_per_item");
            t.row(row.get("label"), Table.rate(num(row, "items_per_s")), String.format(Locale.ROOT, "%.1f", server),
                    String.format(Locale.ROOT, "%.1f", client),
                    String.format(Locale.ROOT, "%.0f%%", 100 * num(row, "machine_busy")),
                    Table.rate(cores * 1e6 / (server + client)));
        }
        t.note("CPU from /proc: server = every postgres process plus the backends that exited during the run"
                + " (accounted to the postmaster); client = the benchmark JVM with pgbench as its waited-for child, or"
                + " the Node process for Graphile Worker (its drain phase only). pgbench's client work is C and tiny, so"
                + " its row is close to the server-only cost of the same statements.");
        return t;
    }

    private static String cell(int w, int b) {
        return "W=" + w + " B=" + b;
    }

    private static Table drainTable(Options o, Map<String, Map<String, Double>> m, Map<String, Object> peer) {
        boolean havePeer = peer != null && !Boolean.TRUE.equals(peer.get("skipped"));
        double graphile = havePeer ? num(peer, "drain_items_per_s") : Double.NaN;
        Table t = new Table("1. Drain (items/s; ratios to the pgbench run of the same statements, same W and B)",
                "W", "B", "pgbench 2 stmts", "claim/complete loop", "÷ pgbench", "claimStream+complete", "÷ pgbench",
                "pgbench completeAndClaim", "process()", "÷ pgbench", "claimStream, deleteOnComplete",
                "÷ claimStream", "process(), deleteOnComplete", "÷ process()", "best library ÷ Graphile (24)");
        for (int w : o.workers) {
            for (int b : o.batches) {
                String c = cell(w, b);
                double p2 = m.get("pgbench_claim_then_complete").get(c);
                double loop = m.get("claim_complete_loop").get(c);
                double stream = m.get("claim_stream").get(c);
                double p1 = m.get("pgbench_complete_and_claim").get(c);
                double process = m.get("process").get(c);
                double deleting = m.get("claim_stream_delete").get(c);
                double processDeleting = m.get("process_delete").get(c);
                double best = bestLibraryMode(m, c).getValue();
                t.row(w, b, Table.rate(p2), Table.rate(loop), Table.ratio(loop / p2), Table.rate(stream),
                        Table.ratio(stream / p2), Table.rate(p1), Table.rate(process), Table.ratio(process / p1),
                        Table.rate(deleting), Table.ratio(deleting / stream), Table.rate(processDeleting),
                        Table.ratio(processDeleting / process), Table.ratio(best / graphile));
            }
        }
        t.note(String.format(Locale.ROOT, "Each cell: %,d keys preloaded into a fresh table (VACUUM ANALYZE), drained until"
                + " empty or for at most %d s; items/s = completed rows ÷ (last completed_at − server clock at start);"
                + " with deleteOnComplete (no completed rows remain) = rows gone ÷ client time from the workers' start to"
                + " the last completion."
                + " Median of %d runs at W=%d, %d run(s) elsewhere.", o.n, o.drainSeconds,
                Math.max(o.repeat, o.targetRepeat), o.targetWorkers, o.repeat));
        if (havePeer) {
            t.note(String.format(Locale.ROOT, "Graphile Worker %s (concurrency %s, localQueue %s, completeJobBatchDelay 0),"
                            + " same server, same run: %s items/s draining %s jobs (mean of %s run(s): %s items/s).",
                    peer.get("version"), peer.get("concurrency"), peer.get("local_queue_size"), Table.rate(graphile),
                    peer.get("n"), peer.get("runs"), peer.get("drain_items_per_s_each")));
        } else if (peer != null) {
            t.note("Graphile Worker: skipped (" + peer.get("reason") + ").");
        }
        return t;
    }

    /** The fastest library mode in {@code cell}: its name as the targets table prints it, and its items/s. */
    private static Map.Entry<String, Double> bestLibraryMode(Map<String, Map<String, Double>> m, String cell) {
        Map<String, Double> library = new LinkedHashMap<>();
        library.put("process()", m.get("process").get(cell));
        library.put("claim/complete loop", m.get("claim_complete_loop").get(cell));
        library.put("claimStream", m.get("claim_stream").get(cell));
        library.put("claimStream with deleteOnComplete", m.get("claim_stream_delete").get(cell));
        library.put("process() with deleteOnComplete", m.get("process_delete").get(cell));
        return library.entrySet().stream().max(Map.Entry.comparingByValue()).orElseThrow();
    }

    private static void drainTargets(Options o, Map<String, Map<String, Double>> m, Map<String, Object> peer,
            List<Map<String, Object>> targets) {
        int w = o.targetWorkers;
        int b = targetBatch(o);
        String c = cell(w, b);
        double process = m.get("process").get(c);
        double loop = m.get("claim_complete_loop").get(c);
        Map.Entry<String, Double> bestLibrary = bestLibraryMode(m, c);
        String bestMode = bestLibrary.getKey();
        double best = bestLibrary.getValue();
        if (peer != null && !Boolean.TRUE.equals(peer.get("skipped"))) {
            double graphile = num(peer, "drain_items_per_s");
            targets.add(target("Drain, " + w + " workers: ≥ 2× Graphile Worker's batched drain",
                    String.format(Locale.ROOT, "%s %s (W=%d B=%d) vs Graphile %s", bestMode, Table.rate(best), w, b, Table.rate(graphile)),
                    best / graphile, 2.0, true));
        } else {
            targets.add(target("Drain, " + w + " workers: ≥ 2× Graphile Worker's batched drain", "peer skipped", Double.NaN, 2.0, true));
        }
        double p1 = m.get("pgbench_complete_and_claim").get(c);
        targets.add(target("Drain, " + w + " workers: ≥ 85% of pgbench running the library's statements (process() vs completeAndClaim)",
                String.format(Locale.ROOT, "process() %s vs pgbench %s (W=%d B=%d)", Table.rate(process), Table.rate(p1), w, b),
                process / p1, 0.85, true));
        double p2 = m.get("pgbench_claim_then_complete").get(c);
        targets.add(target("Drain, " + w + " workers: ≥ 85% of pgbench running the library's statements (claim/complete loop vs 2 statements)",
                String.format(Locale.ROOT, "loop %s vs pgbench %s (W=%d B=%d)", Table.rate(loop), Table.rate(p2), w, b),
                loop / p2, 0.85, true));
    }

    private static void drainChart(Options o, Map<String, Map<String, Double>> m, Map<String, Object> peer) throws IOException {
        Map<String, Map<String, Double>> series = new LinkedHashMap<>();
        for (Drain.Mode mode : Drain.Mode.GRID) {
            series.put(mode.label, m.get(mode.id));
        }
        List<Charts.Marker> markers = new ArrayList<>();
        if (peer != null && !Boolean.TRUE.equals(peer.get("skipped"))) {
            markers.add(new Charts.Marker(num(peer, "drain_items_per_s"),
                    "Graphile Worker " + peer.get("version") + " (concurrency 24, batched)", Color.DARK_GRAY));
        }
        Charts.bars(o.out.resolve("drain.png"), "Drain: items/s by workers (W) and batch size (B), log scale",
                "items/s", series, true, markers, 1400, 700);
    }

    // ------------------------------------------------------------------ 2. enqueue

    private static void enqueue(Options o, Db db, Map<String, Object> results, List<Table> tables,
            List<Map<String, Object>> targets, Map<String, Object> peer) throws IOException {
        System.out.println();
        System.out.printf(Locale.ROOT, "== 2. Enqueue: callers %s, %d s each, pool of %d%n", o.callers, o.enqueueSeconds, o.enqueuePool);
        Enqueue bench = new Enqueue(db, o.enqueueSeconds, o.enqueuePool);
        bench.warmUp();
        List<Enqueue.Run> runs = new ArrayList<>();
        for (int c : o.callers) {
            // The ceiling is re-measured beside every cell, so each ratio compares neighbours in time.
            runs.add(bench.run(Enqueue.Mode.CEILING, c));
            runs.add(bench.run(Enqueue.Mode.LIBRARY, c));
            runs.add(bench.run(Enqueue.Mode.PER_CALL, c));
        }
        List<Map<String, Object>> rows = new ArrayList<>();
        for (Enqueue.Run run : runs) {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("mode", run.mode().id);
            row.put("callers", run.callers());
            row.put("items", run.items());
            row.put("seconds", round(run.seconds(), 3));
            row.put("items_per_s", Math.round(run.itemsPerSecond()));
            row.put("statements", run.statements());
            row.put("transactions", run.transactions());
            row.put("peak_write_connections", run.peakConnections());
            row.put("mean_keys_per_statement", round(run.meanBatch(), 1));
            row.put("write_in_flight_share", Double.isNaN(run.writeBusy()) ? "" : round(run.writeBusy(), 3));
            rows.add(row);
        }
        results.put("enqueue", Map.of("runs", rows));
        Report.csv(o.out.resolve("enqueue.csv"), rows);

        Table t = new Table("2. Enqueue under concurrency (single-key callers)", "callers", "group commit items/s",
                "statements", "xacts", "keys/stmt", "write in flight", "peak conns", "per-call upsert items/s", "xacts",
                "peak conns", "unnest ceiling items/s", "group ÷ per-call", "group ÷ ceiling");
        Map<String, List<double[]>> lines = new LinkedHashMap<>();
        List<double[]> lib = new ArrayList<>();
        List<double[]> perCall = new ArrayList<>();
        List<double[]> ceilings = new ArrayList<>();
        for (int c : o.callers) {
            Enqueue.Run l = find(runs, Enqueue.Mode.LIBRARY, c);
            Enqueue.Run p = find(runs, Enqueue.Mode.PER_CALL, c);
            Enqueue.Run u = find(runs, Enqueue.Mode.CEILING, c);
            t.row(c, Table.rate(l.itemsPerSecond()), l.statements(), l.transactions(),
                    String.format(Locale.ROOT, "%.1f", l.meanBatch()), String.format(Locale.ROOT, "%.0f%%", 100 * l.writeBusy()),
                    l.peakConnections(), Table.rate(p.itemsPerSecond()),
                    p.transactions(), p.peakConnections(), Table.rate(u.itemsPerSecond()),
                    Table.ratio(l.itemsPerSecond() / p.itemsPerSecond()), Table.ratio(l.itemsPerSecond() / u.itemsPerSecond()));
            lib.add(new double[] {c, l.itemsPerSecond()});
            perCall.add(new double[] {c, p.itemsPerSecond()});
            ceilings.add(new double[] {c, u.itemsPerSecond()});
        }
        t.note(String.format(Locale.ROOT, "Ceiling: the library's upsert statement with 1,000 new keys per statement, back to back"
                        + " on one connection, measured right before each cell. Each run lasts %d s into an empty table; pool of %d"
                        + " connections for both callers' modes; statements = the library's flush count (group commit) or calls;"
                        + " xacts = pg_stat_database.xact_commit delta; write in flight = share of the run during which the group commit's"
                        + " upsert was executing (its flush-latency timer), the rest being client time between writes;"
                        + " peak conns = the pool's acquired connections, sampled every 1 ms.",
                o.enqueueSeconds, o.enqueuePool));
        if (peer != null && !Boolean.TRUE.equals(peer.get("skipped"))) {
            t.note(String.format(Locale.ROOT, "For scale: Graphile Worker's bulk addJobs (10,000 jobs per call, one client) ran at %s jobs/s in this run.",
                    Table.rate(num(peer, "add_items_per_s"))));
        }
        tables.add(t);
        t.print();
        lines.put(Enqueue.Mode.LIBRARY.label, lib);
        lines.put(Enqueue.Mode.PER_CALL.label, perCall);
        lines.put(Enqueue.Mode.CEILING.label + " (measured beside each cell)", ceilings);
        Charts.lines(o.out.resolve("enqueue.png"), "Enqueue: items/s by concurrent single-key callers", "concurrent callers",
                "items/s", lines, true, true, List.of(), 1000, 600);

        int c = o.callers.contains(1000) ? 1000 : o.callers.get(o.callers.size() - 1);
        Enqueue.Run l = find(runs, Enqueue.Mode.LIBRARY, c);
        Enqueue.Run p = find(runs, Enqueue.Mode.PER_CALL, c);
        Enqueue.Run ceiling = find(runs, Enqueue.Mode.CEILING, c);
        targets.add(target("Enqueue, " + c + " callers: ≥ 80% of the raw unnest upsert ceiling",
                Table.rate(l.itemsPerSecond()) + " vs " + Table.rate(ceiling.itemsPerSecond()),
                l.itemsPerSecond() / ceiling.itemsPerSecond(), 0.8, true));
        targets.add(target("Enqueue, " + c + " callers: ≥ 20× one statement per call",
                Table.rate(l.itemsPerSecond()) + " vs " + Table.rate(p.itemsPerSecond()),
                l.itemsPerSecond() / p.itemsPerSecond(), 20, true));
        targets.add(target("Enqueue, " + c + " callers: at most one connection held by the write path",
                "peak " + l.peakConnections() + " (per-call baseline: " + p.peakConnections() + ")",
                l.peakConnections(), 1, false));
    }

    private static Enqueue.Run find(List<Enqueue.Run> runs, Enqueue.Mode mode, int callers) {
        return runs.stream().filter(r -> r.mode() == mode && r.callers() == callers).findFirst().orElseThrow();
    }

    // ------------------------------------------------------------------ 3. wake

    private static void wake(Options o, Db db, Path repo, Map<String, Object> results, List<Table> tables,
            List<Map<String, Object>> targets) throws Exception {
        System.out.println();
        System.out.printf(Locale.ROOT, "== 3. Wake latency: %d enqueues %d ms apart to an idle claimStream worker%n",
                o.wakeSamples, o.wakeGapMillis);
        Duration gap = Duration.ofMillis(o.wakeGapMillis);
        List<WakeLatency.Mode> modes = List.of(
                new WakeLatency.Mode("listener, minWakeInterval 1 ms", "listener_floor_1ms", true, Duration.ofMillis(1), Duration.ofSeconds(1)),
                new WakeLatency.Mode("listener, default config (minWakeInterval 100 ms)", "listener_default", true, Duration.ofMillis(100), Duration.ofSeconds(1)),
                new WakeLatency.Mode("poll only, poll 1 s (no listener)", "poll_1s", false, Duration.ofMillis(100), Duration.ofSeconds(1)),
                new WakeLatency.Mode("poll only, poll 100 ms (no listener)", "poll_100ms", false, Duration.ofMillis(100), Duration.ofMillis(100)));
        String app = "bench-wake";
        ConnectionPool pool = db.pool(app, 4);
        List<WakeLatency.Result> measured = new ArrayList<>();
        for (WakeLatency.Mode mode : modes) {
            measured.add(WakeLatency.measure(db.factory("bench-wake-listener"), pool, mode, o.wakeSamples, gap));
        }
        db.dispose(pool, app);
        // The floor under any client on this machine at this cadence: pgbench (C, no driver) paced
        // like the producer. Enqueue → claim needs two durable commits (the enqueue's, the claim's)
        // and one more hop for the notification.
        Pgbench pgbench = new Pgbench(db);
        int perSecond = (int) Math.max(1, 1000 / Math.max(1, o.wakeGapMillis));
        String wakeTable = WorkQueueMigrations.tableName(WakeLatency.PREFIX);
        double commitMillis = pgbench.pacedLatencyMillis("\\set k random(1, 1000000000)\n"
                + "INSERT INTO " + wakeTable + " (queue_name, item_key) VALUES ('pgbench-floor', 'k' || :k)"
                + " ON CONFLICT (queue_name, item_key) DO NOTHING;\n", perSecond, 5);
        double roundTripMillis = pgbench.pacedLatencyMillis("SELECT 1;\n", perSecond, 5);
        db.exec("DELETE FROM " + wakeTable + " WHERE queue_name = 'pgbench-floor'");
        double floorMillis = 2 * commitMillis + roundTripMillis;
        System.out.printf(Locale.ROOT, "  pgbench paced at %d/s: one-row write + commit %.2f ms, SELECT 1 %.2f ms;"
                + " floor for enqueue → claim ≈ 2 × %.2f + %.2f = %.2f ms%n", perSecond, commitMillis, roundTripMillis,
                commitMillis, roundTripMillis, floorMillis);
        Map<String, Object> floor = new LinkedHashMap<>();
        floor.put("per_second", perSecond);
        floor.put("pgbench_one_row_commit_ms", round(commitMillis, 3));
        floor.put("pgbench_select_1_ms", round(roundTripMillis, 3));
        floor.put("floor_ms", round(floorMillis, 3));
        results.put("wake_raw_floor", floor);
        List<Map<String, Object>> rows = new ArrayList<>();
        Table t = new Table("3. Wake latency, enqueue → claimed by an idle worker (ms)", "mode", "p50", "p90", "p99", "max",
                "p50 ÷ listener (1 ms floor)", "of which enqueue commit, p50");
        double reference = measured.get(0).p(50);
        Map<String, Map<String, Double>> chart = new LinkedHashMap<>();
        for (String p : List.of("p50", "p90", "p99")) {
            chart.put(p, new LinkedHashMap<>());
        }
        for (WakeLatency.Result r : measured) {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("mode", r.mode().id());
            row.put("listener", r.mode().listen());
            row.put("min_wake_interval_ms", r.mode().minWakeInterval().toMillis());
            row.put("poll_ms", r.mode().poll().toMillis());
            row.put("samples", r.latenciesMillis().size());
            row.put("gap_ms", o.wakeGapMillis);
            row.put("p50_ms", round(r.p(50), 3));
            row.put("p90_ms", round(r.p(90), 3));
            row.put("p99_ms", round(r.p(99), 3));
            row.put("max_ms", round(r.p(100), 3));
            row.put("enqueue_commit_p50_ms", round(Percentiles.of(r.enqueueMillis(), 50), 3));
            row.put("enqueue_commit_p99_ms", round(Percentiles.of(r.enqueueMillis(), 99), 3));
            rows.add(row);
            t.row(r.mode().label(), Table.ms(r.p(50)), Table.ms(r.p(90)), Table.ms(r.p(99)), Table.ms(r.p(100)),
                    Table.ratio(r.p(50) / reference), Table.ms(Percentiles.of(r.enqueueMillis(), 50)));
            String label = r.mode().label().replace(" (", "\n(");
            chart.get("p50").put(label, r.p(50));
            chart.get("p90").put(label, r.p(90));
            chart.get("p99").put(label, r.p(99));
        }
        t.note("Latency runs from just before enqueue() to the item's arrival in claimStream, so it includes the enqueue's"
                + " own commit (its p50 in the last column: the wakeup can only be sent at that commit). With enqueues 10 ms apart, the default 100 ms wake floor holds each wake until the floor ends:"
                + " that row shows the floor, the 1 ms row the mechanism.");
        t.note(String.format(Locale.ROOT, "The floor on this machine at this cadence, from pgbench (a C client, no driver)"
                        + " paced at %d/s in the same run: a one-row write and its commit %.2f ms average, a SELECT 1 round trip"
                        + " %.2f ms. Enqueue → claim is two durable commits plus the notification's hop: ≈ %.2f ms before any"
                        + " client cost. Idle between statements, this virtual machine's CPUs and the backend sleep, and waking"
                        + " them costs most of that (flat out, pgbench's write + commit takes a third as long).",
                perSecond, commitMillis, roundTripMillis, floorMillis));
        results.put("wake", rows);
        Report.csv(o.out.resolve("wake.csv"), rows);
        tables.add(t);
        t.print();
        Charts.bars(o.out.resolve("wake.png"), "Wake latency, enqueue → claim (ms, log scale)", "ms", chart, true,
                List.of(), 1200, 600);
        WakeLatency.Result best = measured.get(0);
        targets.add(target("Wake latency with a listener: p50 ≤ 2 ms", best.mode().label() + ": p50 " + Table.ms(best.p(50))
                        + " ms (raw pgbench floor at this cadence ≈ " + Table.ms(floorMillis) + " ms)",
                best.p(50), 2, false));
        targets.add(target("Wake latency with a listener: p99 ≤ 5 ms", best.mode().label() + ": p99 " + Table.ms(best.p(99)) + " ms",
                best.p(99), 5, false));
    }

    // ------------------------------------------------------------------ 4. history

    private static void history(Options o, Db db, Map<String, Object> results, List<Table> tables,
            List<Map<String, Object>> targets) throws IOException {
        System.out.println();
        System.out.printf(Locale.ROOT, "== 4. Claim latency vs history: claim(100) with %,d ready rows beside %,d vs %,d completed rows, %d claims each%n",
                o.historyReady, o.historySmall, o.historyLarge, o.historyClaims);
        ClaimHistory.Result r = new ClaimHistory(db).run(o.historySmall, o.historyLarge, o.historyReady, o.historyClaims);
        Table t = new Table("4. Claim latency vs un-reaped history (claim of 100, ms)", "completed rows", "vacuumed since?",
                "ready rows", "p50", "p90", "p99", "p50 ÷ small history");
        List<Map<String, Object>> rows = new ArrayList<>();
        Map<String, Map<String, Double>> chart = new LinkedHashMap<>();
        chart.put("p50", new LinkedHashMap<>());
        chart.put("p90", new LinkedHashMap<>());
        for (ClaimHistory.Side side : List.of(r.small(), r.large(), r.unvacuumed())) {
            List<Double> l = side.latenciesMillis();
            t.row(String.format(Locale.ROOT, "%,d", side.completedRows()), side.vacuumed() ? "yes" : "no (autovacuum off)",
                    String.format(Locale.ROOT, "%,d", side.readyRows()),
                    Table.ms(side.median()), Table.ms(Percentiles.of(l, 90)), Table.ms(Percentiles.of(l, 99)),
                    Table.ratio(side.median() / r.small().median()));
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("completed_rows", side.completedRows());
            row.put("vacuumed_after_completion", side.vacuumed());
            row.put("ready_rows", side.readyRows());
            row.put("claims", l.size());
            row.put("p50_ms", round(side.median(), 3));
            row.put("p90_ms", round(Percentiles.of(l, 90), 3));
            row.put("p99_ms", round(Percentiles.of(l, 99), 3));
            row.put("explain_analyze", side.plan());
            rows.add(row);
            String label = String.format(Locale.ROOT, "%,d completed rows%s", side.completedRows(),
                    side.vacuumed() ? "" : "\n(not yet vacuumed)");
            chart.get("p50").put(label, side.median());
            chart.get("p90").put(label, Percentiles.of(l, 90));
        }
        t.note("All tables hold the same ready backlog; claims rotate between them and each claim's items are released"
                + " (untimed) so the backlog stays the same. The first two were VACUUM ANALYZEd after the history was written"
                + " (steady state: the partial claim index holds only pending rows). The third completed its history by one"
                + " UPDATE after the index was built, with autovacuum off: the claim index still carries the completed rows'"
                + " dead entries, as it does during a drain until vacuum catches up. EXPLAIN (ANALYZE, BUFFERS) of each claim is"
                + " in results.json.");
        results.put("claim_history", Map.of("ratio_p50", round(r.ratio(), 3),
                "unvacuumed_ratio_p50", round(r.unvacuumedRatio(), 3), "sides", rows));
        Report.csv(o.out.resolve("claim_history.csv"), rows.stream().map(row -> {
            Map<String, Object> copy = new LinkedHashMap<>(row);
            copy.remove("explain_analyze");
            return copy;
        }).toList());
        tables.add(t);
        t.print();
        Charts.bars(o.out.resolve("claim_history.png"), "claim(100) latency vs completed-but-unreaped rows (ms)", "ms",
                chart, false, List.of(), 900, 550);
        targets.add(target(String.format(Locale.ROOT, "Claim latency with %,d un-reaped rows ≤ 1.5× the %,d case",
                        o.historyLarge, o.historySmall),
                Table.ms(r.large().median()) + " ms vs " + Table.ms(r.small().median()) + " ms (p50), both vacuumed", r.ratio(), 1.5, false));
        targets.add(target(String.format(Locale.ROOT, "… the same, %,d rows completed since the last vacuum (not in the issue; shows"
                                + " the dead-entry cost)", o.historyLarge),
                Table.ms(r.unvacuumed().median()) + " ms vs " + Table.ms(r.small().median()) + " ms (p50)", r.unvacuumedRatio(), 1.5,
                false));
    }

    // ------------------------------------------------------------------ 5. heap

    private static void heap(Options o, Db db, Map<String, Object> results, List<Table> tables,
            List<Map<String, Object>> targets) throws IOException {
        System.out.println();
        int small = Math.max(1_000, o.heapN / 10);
        System.out.printf(Locale.ROOT, "== 5. Heap: claimStream draining %,d and then %,d keys into a slow consumer (%d in flight, %d ms each)%n",
                small, o.heapN, o.heapInFlight, o.heapItemMillis);
        HeapBound bench = new HeapBound(db);
        List<HeapBound.Result> measured = List.of(
                bench.run(small, o.heapInFlight, o.heapItemMillis, o.heapSeconds),
                bench.run(o.heapN, o.heapInFlight, o.heapItemMillis, o.heapSeconds));
        List<Map<String, Object>> rows = new ArrayList<>();
        List<Map<String, Object>> summaries = new ArrayList<>();
        Map<String, List<double[]>> lines = new LinkedHashMap<>();
        Table t = new Table("5. Heap while claimStream drains a backlog into a slow consumer",
                "backlog", "drained", "seconds", "samples", "used heap after GC above baseline: median", "max",
                "backlog as List<Item>", "peak leased items");
        for (HeapBound.Result r : measured) {
            List<double[]> line = new ArrayList<>();
            for (HeapBound.Sample sample : r.samples()) {
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("backlog", r.backlog());
                row.put("seconds", round(sample.seconds(), 2));
                row.put("completed", sample.completed());
                row.put("used_heap_above_baseline_bytes", sample.usedHeapBytes());
                row.put("leased", sample.leased() >= 0 ? sample.leased() : "");
                rows.add(row);
                line.add(new double[] {sample.seconds(), sample.usedHeapBytes() / 1048576.0});
            }
            lines.put(String.format(Locale.ROOT, "backlog %,d", r.backlog()), line);
            Map<String, Object> summary = new LinkedHashMap<>();
            summary.put("backlog", r.backlog());
            summary.put("completed", r.completed());
            summary.put("drained", r.drained());
            summary.put("seconds", round(r.seconds(), 1));
            summary.put("in_flight", r.inFlight());
            summary.put("item_ms", r.itemMillis());
            summary.put("baseline_heap_bytes", r.baselineHeapBytes());
            summary.put("median_heap_above_baseline_bytes", r.medianHeapBytes());
            summary.put("peak_heap_above_baseline_bytes", r.peakHeapBytes());
            summary.put("backlog_as_item_list_bytes", r.backlogAsListBytes());
            summary.put("peak_leased", r.peakLeased());
            summaries.add(summary);
            t.row(String.format(Locale.ROOT, "%,d", r.backlog()), String.format(Locale.ROOT, "%,d", r.completed()),
                    String.format(Locale.ROOT, "%.0f", r.seconds()), r.samples().size(), mib(r.medianHeapBytes()),
                    mib(r.peakHeapBytes()), mib(r.backlogAsListBytes()), r.peakLeased());
        }
        HeapBound.Result s = measured.get(0);
        HeapBound.Result l = measured.get(1);
        // How much of the backlog's growth showed up in the heap: 1 if the heap held the backlog, 0 if it held only demand.
        double growth = (double) (l.medianHeapBytes() - s.medianHeapBytes()) / (l.backlogAsListBytes() - s.backlogAsListBytes());
        t.note(String.format(Locale.ROOT, "Backlog ×%.0f, median heap %s → %s, backlog as a list %s → %s: the heap grew by %.1f%% of"
                        + " the backlog's growth (100%% if it held the backlog, 0%% if only demand).",
                (double) l.backlog() / s.backlog(), mib(s.medianHeapBytes()), mib(l.medianHeapBytes()),
                mib(s.backlogAsListBytes()), mib(l.backlogAsListBytes()), 100 * growth));
        t.note(String.format(Locale.ROOT, "Consumer: claimStream → flatMap(delay %d ms, concurrency %d) → bufferTimeout(100, 50 ms)"
                        + " → complete, so demand is at most %d items in flight plus the completion buffers. Heap sampled every second"
                        + " after System.gc() (MemoryMXBean; the forced GCs slow the drain a little); baseline = used heap after GC"
                        + " before each drain. Leased = pending rows with a live lease, read every ~5 s.",
                o.heapItemMillis, o.heapInFlight, o.heapInFlight));
        Map<String, Object> heap = new LinkedHashMap<>();
        heap.put("heap_growth_fraction_of_backlog_growth", round(growth, 4));
        heap.put("runs", summaries);
        results.put("heap", heap);
        Report.csv(o.out.resolve("heap.csv"), rows);
        tables.add(t);
        t.print();
        Charts.lines(o.out.resolve("heap.png"), "Used heap after GC during a claimStream drain with a slow consumer",
                "seconds", "MiB above baseline", lines, false, false,
                List.of(new Charts.Marker(l.backlogAsListBytes() / 1048576.0, String.format(Locale.ROOT,
                        "the %,d-key backlog as a List<Item>: %s", l.backlog(), mib(l.backlogAsListBytes())), Color.DARK_GRAY)),
                1000, 550);
        targets.add(target(String.format(Locale.ROOT, "Memory: claimStream heap bounded by demand, not backlog, draining %,d keys"
                                + " (heap growth ≤ 10%% of the backlog's growth from %,d keys)", l.backlog(), s.backlog()),
                String.format(Locale.ROOT, "median %s (max %s) at %,d keys vs %s at %,d (backlog list %s); peak leased %d (demand %d)%s",
                        mib(l.medianHeapBytes()), mib(l.peakHeapBytes()), l.backlog(), mib(s.medianHeapBytes()), s.backlog(),
                        mib(l.backlogAsListBytes()),
                        l.peakLeased(), l.inFlight(), l.drained() ? "" : String.format(Locale.ROOT,
                                "; drained %,d before the %d s cap", l.completed(), o.heapSeconds)),
                growth, 0.1, false));
    }

    private static String mib(long bytes) {
        return String.format(Locale.ROOT, "%.1f MiB", bytes / 1048576.0);
    }

    // ------------------------------------------------------------------ targets

    private static Map<String, Object> target(String what, String measured, double value, double goal, boolean atLeast) {
        Map<String, Object> t = new LinkedHashMap<>();
        t.put("target", what);
        t.put("measured", measured);
        t.put("value", Double.isNaN(value) ? null : round(value, 3));
        t.put("goal", goal);
        t.put("at_least", atLeast);
        t.put("met", Double.isNaN(value) ? null : atLeast ? value >= goal : value <= goal);
        return t;
    }

    private static Table targetTable(List<Map<String, Object>> targets) {
        Table t = new Table("Targets of issue #5, measured in this run", "target", "measured", "ratio / value", "met?");
        for (Map<String, Object> target : targets) {
            Object met = target.get("met");
            Object value = target.get("value");
            t.row(target.get("target"), target.get("measured"),
                    value == null ? "—" : String.format(Locale.ROOT, "%.2f", ((Number) value).doubleValue()),
                    met == null ? "not measured" : Boolean.TRUE.equals(met) ? "yes" : "**no**");
        }
        return t;
    }

    static double num(Map<String, Object> map, String key) {
        Object v = map.get(key);
        return v instanceof Number n ? n.doubleValue() : Double.NaN;
    }

    /** A benchmark's body, given the command line. */
    @FunctionalInterface
    interface Main {
        void run(String[] args) throws Exception;
    }

    /**
     * What every benchmark's {@code main} does: runs {@code main}, then exits with 0, or prints
     * what it threw and exits with 1. Exiting ends whatever threads a run left behind; the failure
     * is printed here because {@code System.exit} ends the JVM before the default handler would.
     */
    static void exitAfter(String[] args, Main main) {
        int status = 1;
        try {
            main.run(args);
            status = 0;
        } catch (Throwable failure) {
            failure.printStackTrace();
        } finally {
            System.exit(status);
        }
    }

    static double round(double value, int digits) {
        if (Double.isNaN(value) || Double.isInfinite(value)) {
            return value;
        }
        double scale = Math.pow(10, digits);
        return Math.round(value * scale) / scale;
    }
}
