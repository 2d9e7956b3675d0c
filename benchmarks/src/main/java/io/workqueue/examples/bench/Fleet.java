package io.workqueue.examples.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The fleet benchmark of issue 23: what the queue costs the database when it runs as several
 * processes on one table, with the baselines in the same run.
 *
 * <ol>
 *   <li><b>drain</b>: N preloaded keys drained by P member JVMs ({@link FleetMember}) with W/P
 *       {@code process()} workers each, for each P at the same total W; items/s and the server's
 *       CPU per item. Graphile Worker with the same P (Node processes, {@code peers/graphile-worker/fleet.mjs})
 *       drains the same N in the same run.
 *   <li><b>txenqueue</b>: 32 concurrent business transactions, each {@code BEGIN; INSERT} into a
 *       business table, {@code enqueue(connection, one entry)}, {@code COMMIT}, for a queue with a
 *       notify channel and one without, in alternating rounds; a {@code claimStream} on a listening
 *       instance times each key from its transaction's commit to its hand-out.
 *   <li><b>housekeeping</b>: P member JVMs each run one round of housekeeping per interval
 *       ({@link FleetMember#housekeepOnce}) on a queue with history; the server's CPU per interval
 *       at each P.
 *   <li><b>wake</b>: {@link WakeLatency} with a listener, 1 ms floor and default floor.
 * </ol>
 *
 * Run it through {@code benchmarks/fleet.sh}; {@code --help} lists the options.
 */
public final class Fleet {
    static final String PREFIX = "fleet";
    static final String WARM_PREFIX = "fleet_warm";
    static final String QUEUE = "fleet";
    static final String TX_PREFIX = "fleet_tx";
    static final String TX_CHANNEL = "fleet_tx";
    static final String BUSINESS_TABLE = "fleet_business";
    static final String HK_PREFIX = "fleet_hk";
    static final String HK_QUEUE = "hk";
    static final Duration HK_RETENTION = Duration.ofHours(1);
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    /** Command-line options; {@code --quick} changes the defaults only. */
    static final class Options {
        boolean quick;
        String[] args;
        int n = 200_000;
        int workers = 16;
        int batch = 100;
        List<Integer> processes = List.of(1, 2, 4);
        /**
         * The P of {@link #processes} that also drain with a queue per process (the backlog split
         * over P queues of the table): what P processes cost with no frontier shared.
         */
        List<Integer> splitProcesses = List.of(4);
        int repeat = 3;
        int peerRepeat = 2;
        int peerConcurrency = 24;
        int drainCapSeconds = 120;
        int warmup = 20_000;
        int txCallers = 32;
        int txSeconds = 10;
        int txRounds = 3;
        /**
         * How long the transactional-enqueue consumer gathers handed-out keys before completing them
         * (at most 100 at once): 50 ms, as the README's claimStream snippet does. Until 2026-12-06 it
         * was 5 ms, a complete statement (and its commit) per few keys; the same session measured
         * the channel at 0.62× of no channel with 5 ms and 0.84× with 50 ms (fleet/ANALYSIS.md).
         */
        int txCompleteMillis = 50;
        /** The transactional-enqueue phase's modes, in the order their rounds rotate through. */
        List<FleetRuns.TxMode> txModes = List.of(FleetRuns.TxMode.values());
        List<Integer> hkProcesses = List.of(1, 8);
        int hkPending = 100_000;
        int hkCompleted = 1_000_000;
        int hkIntervalMillis = 5_000;
        int hkIntervals = 12;
        /** Runs per P, alternating which P goes first; the ratio is of the medians. */
        int hkRepeat = 2;
        /** Whether the members' schedules start together ({@code aligned}) or spread over one interval. */
        boolean hkSpread = false;
        int wakeSamples = 1000;
        int wakeGapMillis = 10;
        Set<String> scenarios = new LinkedHashSet<>(List.of("drain", "txenqueue", "housekeeping", "wake"));
        Path out;

        /** When member {@code i} of {@code p} ticks first, in milliseconds after {@code go}. */
        long hkPhaseMillis(int i, int p) {
            return hkSpread ? (long) hkIntervalMillis * i / p : 0;
        }

        static Options parse(String[] args, Path repo) {
            Options o = new Options();
            o.args = args;
            List<String> list = Arrays.asList(args);
            if (list.contains("--quick")) {
                o.quick = true;
                o.n = 20_000;
                o.repeat = 1;
                o.peerRepeat = 1;
                o.warmup = 2_000;
                o.txSeconds = 4;
                o.txRounds = 1;
                o.hkPending = 10_000;
                o.hkCompleted = 100_000;
                o.hkIntervalMillis = 2_000;
                o.hkIntervals = 5;
                o.hkRepeat = 1;
                o.wakeSamples = 200;
            }
            for (int i = 0; i < args.length; i++) {
                String a = args[i];
                switch (a) {
                    case "--quick" -> { }
                    case "--n" -> o.n = Integer.parseInt(args[++i]);
                    case "--workers" -> o.workers = Integer.parseInt(args[++i]);
                    case "--batch" -> o.batch = Integer.parseInt(args[++i]);
                    case "--processes" -> o.processes = ints(args[++i]);
                    case "--split-processes" -> {
                        String v = args[++i];
                        o.splitProcesses = "none".equals(v) ? List.of() : ints(v);
                    }
                    case "--repeat" -> o.repeat = Integer.parseInt(args[++i]);
                    case "--peer-repeat" -> o.peerRepeat = Integer.parseInt(args[++i]);
                    case "--peer-concurrency" -> o.peerConcurrency = Integer.parseInt(args[++i]);
                    case "--warmup" -> o.warmup = Integer.parseInt(args[++i]);
                    case "--tx-callers" -> o.txCallers = Integer.parseInt(args[++i]);
                    case "--tx-seconds" -> o.txSeconds = Integer.parseInt(args[++i]);
                    case "--tx-rounds" -> o.txRounds = Integer.parseInt(args[++i]);
                    case "--tx-complete-ms" -> o.txCompleteMillis = Integer.parseInt(args[++i]);
                    case "--tx-modes" -> o.txModes = FleetRuns.TxMode.parseAll(args[++i]);
                    case "--hk-processes" -> o.hkProcesses = ints(args[++i]);
                    case "--hk-pending" -> o.hkPending = Integer.parseInt(args[++i]);
                    case "--hk-completed" -> o.hkCompleted = Integer.parseInt(args[++i]);
                    case "--hk-interval-ms" -> o.hkIntervalMillis = Integer.parseInt(args[++i]);
                    case "--hk-intervals" -> o.hkIntervals = Integer.parseInt(args[++i]);
                    case "--hk-repeat" -> o.hkRepeat = Integer.parseInt(args[++i]);
                    case "--hk-phase" -> o.hkSpread = switch (args[++i]) {
                        case "spread" -> true;
                        case "aligned" -> false;
                        default -> throw new IllegalArgumentException("--hk-phase takes spread or aligned, not " + args[i]);
                    };
                    case "--wake-samples" -> o.wakeSamples = Integer.parseInt(args[++i]);
                    case "--wake-gap-ms" -> o.wakeGapMillis = Integer.parseInt(args[++i]);
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
            if (!list.contains("--split-processes")) {
                o.splitProcesses = o.splitProcesses.stream().filter(o.processes::contains).toList();
            } else if (!o.processes.containsAll(o.splitProcesses)) {
                throw new IllegalArgumentException("--split-processes " + o.splitProcesses + " must be among --processes " + o.processes);
            }
            for (int p : o.processes) {
                if (p < 1 || o.workers % p != 0) {
                    throw new IllegalArgumentException("--workers " + o.workers + " must split evenly over " + p + " processes");
                }
            }
            if (o.out == null) {
                o.out = o.quick ? repo.resolve("benchmarks/target/fleet-quick") : repo.resolve("docs/benchmarks/fleet");
            } else if (!o.out.isAbsolute()) {
                o.out = repo.resolve(o.out);
            }
            return o;
        }

        private static List<Integer> ints(String csv) {
            return Arrays.stream(csv.split(",")).map(String::trim).map(Integer::parseInt).toList();
        }

        Map<String, Object> toMap() {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("mode", quick ? "quick" : "full");
            m.put("arguments", String.join(" ", args));
            m.put("drain_n", n);
            m.put("drain_total_workers", workers);
            m.put("drain_batch", batch);
            m.put("drain_processes", processes);
            m.put("drain_split_processes", splitProcesses);
            m.put("drain_repeat", repeat);
            m.put("drain_member_warmup_items_per_round", warmup);
            m.put("peer_repeat", peerRepeat);
            m.put("peer_total_concurrency", peerConcurrency);
            m.put("tx_callers", txCallers);
            m.put("tx_seconds_per_round", txSeconds);
            m.put("tx_rounds_per_mode", txRounds);
            m.put("tx_consumer_completes_every_ms", txCompleteMillis);
            m.put("tx_modes", txModes.stream().map(mode -> mode.key).toList());
            m.put("hk_processes", hkProcesses);
            m.put("hk_pending", hkPending);
            m.put("hk_completed", hkCompleted);
            m.put("hk_retention_s", HK_RETENTION.toSeconds());
            m.put("hk_interval_ms", hkIntervalMillis);
            m.put("hk_intervals", hkIntervals);
            m.put("hk_repeat", hkRepeat);
            m.put("hk_phase", hkSpread ? "spread" : "aligned");
            m.put("housekeeping", FleetMember.HOUSEKEEPING);
            m.put("wake_samples", wakeSamples);
            m.put("wake_gap_ms", wakeGapMillis);
            m.put("scenarios", scenarios);
            return m;
        }
    }

    private static void usage() {
        System.out.println("""
                benchmarks/fleet.sh [--quick] [options]
                  --quick                  smoke sizes (~3 min); results go to benchmarks/target/fleet-quick
                  --out DIR                where results go (default docs/benchmarks/fleet, or the quick folder)
                  --only a,b / --skip a,b  scenarios: drain, txenqueue, housekeeping, wake (the peer runs inside drain)
                  --n N (200000)           drain preload         --workers W (16) total    --batch B (100)
                  --processes 1,2,4        --repeat R (3)        --peer-repeat R (2)      --peer-concurrency C (24, total)
                  --split-processes 4      those P drain again with a queue per process (none: skip)
                  --warmup N (20000)       items of each warm-up round a member drains on a table of its own before the
                                           clock starts; rounds repeat until its JIT settles (0: no warm-up)
                  --tx-callers C (32)      --tx-seconds S (10)   --tx-rounds R (3 per mode, alternating)
                  --tx-complete-ms M (50)  how long the consumer gathers handed-out keys before completing them
                  --tx-modes a,b           of none, channel, channel_floor_10ms, announced, announced_floor_10ms, polling, unheard (all)
                  --hk-processes 1,8       --hk-pending N (100000) --hk-completed N (1000000)
                  --hk-interval-ms I (5000) --hk-intervals K (12) --hk-repeat R (2 per P, alternating)
                  --hk-phase aligned|spread (aligned) members' first ticks together, or member i's at i/P of an interval
                  --wake-samples S (1000)  --wake-gap-ms G (10)
                """);
    }

    public static void main(String[] args) {
        Bench.exitAfter(args, Fleet::run);
    }

    private static void run(String[] args) throws Exception {
        Path repo = Path.of(System.getProperty("bench.repo", ".")).toAbsolutePath().normalize();
        Options o = Options.parse(args, repo);
        String database = System.getProperty("bench.database", "bench_fleet");
        Db db = Db.fromEnvironment(database);
        Files.createDirectories(o.out);
        long suiteStart = System.nanoTime();
        Map<String, Object> results = new LinkedHashMap<>();
        Map<String, Object> machine = Machine.describe(db, repo);
        results.put("machine", machine);
        results.put("config", o.toMap());
        System.out.println("reactive-workqueue fleet benchmark (" + (o.quick ? "quick" : "full") + ") against " + db.url());
        machine.forEach((k, v) -> System.out.println("  " + k + ": " + v));
        if (!"on".equals(db.queryString("SHOW autovacuum"))) {
            System.out.println("  note: autovacuum is off on this server; nothing vacuums the tables between the harness's own VACUUMs");
        }
        List<Table> tables = new ArrayList<>();
        List<Map<String, Object>> targets = new ArrayList<>();
        FleetRuns runs = new FleetRuns(db, repo, database);
        if (o.scenarios.contains("drain")) {
            timed("drain", () -> runs.drain(o, results, tables, targets));
        }
        if (o.scenarios.contains("txenqueue")) {
            timed("txenqueue", () -> runs.transactionalEnqueue(o, results, tables, targets));
        }
        if (o.scenarios.contains("housekeeping")) {
            timed("housekeeping", () -> runs.housekeeping(o, results, tables, targets));
        }
        if (o.scenarios.contains("wake")) {
            timed("wake", () -> runs.wake(o, results, tables, targets));
        }
        machine.put("load_average_end", Machine.loadAverage());
        double total = (System.nanoTime() - suiteStart) / 1e9;
        machine.put("suite_seconds", Math.round(total));
        results.put("targets", targets);
        Table targetTable = targetTable(targets);
        targetTable.print();
        JSON.writeValue(o.out.resolve("results.json").toFile(), results);
        writeReadme(o, results, targetTable, tables);
        System.out.printf(Locale.ROOT, "%nFleet benchmark took %.0f s. Results in %s%n", total, o.out);
    }

    interface Phase {
        void run() throws Exception;
    }

    private static void timed(String name, Phase phase) throws Exception {
        long t = System.nanoTime();
        phase.run();
        System.out.printf(Locale.ROOT, "%s took %.0f s%n", name, (System.nanoTime() - t) / 1e9);
    }

    static Map<String, Object> target(String what, String measured, double value, double goal, boolean atLeast) {
        Map<String, Object> t = new LinkedHashMap<>();
        t.put("target", what);
        t.put("measured", measured);
        t.put("value", Double.isNaN(value) ? null : Bench.round(value, 3));
        t.put("goal", goal);
        t.put("at_least", atLeast);
        t.put("met", Double.isNaN(value) ? null : atLeast ? value >= goal : value <= goal);
        return t;
    }

    private static Table targetTable(List<Map<String, Object>> targets) {
        Table t = new Table("Targets of issue 23, measured in this run", "target", "measured", "ratio / value", "met?");
        for (Map<String, Object> target : targets) {
            Object met = target.get("met");
            Object value = target.get("value");
            t.row(target.get("target"), target.get("measured"),
                    value == null ? "—" : String.format(Locale.ROOT, "%.2f", ((Number) value).doubleValue()),
                    met == null ? "not measured" : Boolean.TRUE.equals(met) ? "yes" : "**no**");
        }
        return t;
    }

    @SuppressWarnings("unchecked")
    private static void writeReadme(Options o, Map<String, Object> results, Table targets, List<Table> tables)
            throws IOException {
        Map<String, Object> machine = (Map<String, Object>) results.get("machine");
        String command = "benchmarks/fleet.sh" + (o.args.length == 0 ? "" : " " + String.join(" ", o.args));
        StringBuilder md = new StringBuilder("# Fleet benchmark (issue 23)\n\n");
        if (o.quick) {
            md.append("> **QUICK SMOKE RUN.** Small sizes, one round each, so every ratio below is noisy; it shows the harness")
                    .append(" runs end to end, not what the library does. Take numbers from a full run on a quiet machine.\n\n");
        }
        md.append("Generated by `").append(command).append("` on ").append(machine.get("date_utc")).append(" (")
                .append(o.quick ? "quick" : "full").append(" run, ").append(machine.get("suite_seconds"))
                .append(" s, load average ").append(machine.get("load_average_start")).append(" at the start, ")
                .append(machine.get("load_average_end")).append(" at the end; git ").append(machine.get("git_commit"))
                .append(Boolean.TRUE.equals(machine.get("git_dirty")) ? ", uncommitted changes" : "")
                .append("). Every ratio compares numbers measured in this run, against the same server.\n\n");
        md.append("**Reproduce** from the repository root (PostgreSQL at $PGHOST:$PGPORT, default 127.0.0.1:5432, user postgres,")
                .append(" trust; Java 17, Maven, psql, Node and npm for the peer):\n\n```\n")
                .append("benchmarks/fleet.sh           # full run (~25-30 min on 2 cores), writes docs/benchmarks/fleet/\n")
                .append("benchmarks/fleet.sh --quick   # smoke run (~3 min), writes benchmarks/target/fleet-quick/\n")
                .append("benchmarks/fleet.sh --help    # options\n```\n\n");
        md.append("## Machine\n\n| | |\n|---|---|\n");
        for (String key : List.of("date_utc", "cpu", "nproc", "memory", "os", "postgresql", "postgresql_settings", "java",
                "node", "git_commit", "git_dirty", "load_average_start", "load_average_end")) {
            md.append("| ").append(key).append(" | ").append(String.valueOf(machine.get(key)).replace("|", "\\|")).append(" |\n");
        }
        md.append("\n## Targets\n\n").append(targets.markdown()).append('\n');
        for (Table table : tables) {
            md.append("## ").append(table.title).append("\n\n").append(table.markdown()).append('\n');
        }
        md.append("""
                ## How each phase is measured

                Server CPU is read from `/proc` (`CpuMeter.java`): every `postgres` process, plus what the postmaster
                collected from backends that exited, so it counts the checkpointer and WAL writer too and anything else
                the server did meanwhile. On a shared machine that includes other people's work, so each phase also
                reports **own sessions**: the CPU of the backends connected to the benchmark's database (or the peer's),
                read from `/proc/<pid>/stat` for the pids `pg_stat_activity` lists, before the start and before the
                members disconnect. Members keep their pools open until then for this reason. Every measured stretch
                (a drain, a transactional-enqueue round, housekeeping) starts after a `CHECKPOINT`, so that no checkpoint
                flushes earlier runs' writes during it; drain.csv says whether one began anyway, and what the server
                wrote to its log (`WalMeter.java`: `pg_stat_wal`'s records, full-page images and bytes per item, a count
                the machine's load does not move).

                1. **Drain** (`Fleet`, `FleetMember drain`): the table is emptied, N keys inserted by SQL and VACUUM
                   ANALYZEd. P member JVMs start, each with a pool of W/P + 1 connections, and drain warm-up backlogs of
                   their own on another table, round after round until their JIT has settled (it compiled for at most
                   %d %% of the last round; at most %d rounds or %d s): with one round, the compiler threads of four
                   members took a third of the machine during the measured drain. Each run reports the members'
                   compile time during it. Once all are ready the parent reads the CPU counters and sends `go`. Each
                   member runs W/P `process()` workers (`concurrency = claimBatch = B`, no-op handler).
                   When the members' reported completions add up to N the parent sends `stop` (`process()`'s graceful stop),
                   and reads the counters again. items/s = items ÷ (latest completion any member saw − `go`), on the
                   machine's clock; "table" is the suite's Drain formula (completed rows ÷ last `completed_at` − server
                   clock at `go`). Graphile Worker: one Node process adds N jobs (`addJobs`, 10,000 per call) and
                   VACUUM ANALYZEs, then P worker processes, each with concurrency C/P, `localQueue.size` 500 and batched
                   completion, a pool of its own opened before `go`; the same `go`/`stop` and the same measurements.
                   Runs interleave (library P=1, peer P=1, library P=2, …) and repeat; medians are reported.
                2. **Transactional enqueue** (`FleetRuns.transactionalEnqueue`): C loops, each on a pooled connection:
                   `BEGIN; INSERT INTO fleet_business …; queue.enqueue(connection, [one entry]); COMMIT`, back to back for
                   S seconds. Rounds rotate through the modes of the table (a fresh queue name each round, same table),
                   after an unrecorded warm-up round of each. In every round a `claimStream` on a second instance, wired
                   to a `PgNotificationListener` on the channel, with `minWakeInterval` 1 ms (10 ms on both queues in the
                   mode that says so) and a 1 s poll, consumes the keys and completes them (gathered for %d ms,
                   at most 100 at once; the README's `claimStream` snippet gathers for 50); the latency of a key is
                   from the moment its enqueuer's `COMMIT` returned to the moment the stream handed it out, both on this
                   JVM's clock. Without a channel nothing wakes the stream but its poll and its own follow-up claims.
                3. **Housekeeping** (`FleetMember housekeep`): a queue with P pending keys and H completed rows whose
                   completion times are spread evenly over the retention (1 h), so rows come due for reaping at a steady
                   rate during the run, plus two reap batches already due; VACUUM ANALYZEd. P member JVMs each run
                   `FleetMember.housekeepOnce` at every tick of their own schedule (interval I, K ticks, a tick that comes
                   while a round runs is dropped, as the starter does). CPU per interval = CPU from `go` until every
                   member finished its schedule, ÷ K.
                4. **Wake latency** (`WakeLatency.measure`): as in the suite: one idle `claimStream` worker, a producer
                   enqueueing one key every G ms, latency from just before `enqueue()` to the hand-out. "Today" is the
                   committed suite result in `docs/benchmarks/results.json` (another run, another time: a reference,
                   not a same-run baseline).

                Files: [results.json](results.json) (everything), [drain.csv](drain.csv), [txenqueue.csv](txenqueue.csv),
                [housekeeping.csv](housekeeping.csv), [wake.csv](wake.csv).
                """.formatted(Math.round(FleetMember.JIT_SETTLED_SHARE * 100), FleetMember.MAX_WARMUP_ROUNDS,
                FleetMember.MAX_WARMUP.toSeconds(), o.txCompleteMillis));
        Files.writeString(o.out.resolve("README.md"), md);
    }

    // ------------------------------------------------------------------ members

    /**
     * A member process and the lines it prints: {@code ready}, {@code progress N}, {@code done
     * {json}}; anything else is passed on to this process's stderr. Thread-safe.
     */
    static final class Member {
        final String name;
        final Process process;
        private final Writer in;
        final CountDownLatch ready = new CountDownLatch(1);
        final CountDownLatch done = new CountDownLatch(1);
        final AtomicLong progress = new AtomicLong();
        volatile Map<String, Object> report = Map.of();

        Member(String name, ProcessBuilder builder) throws IOException {
            this.name = name;
            this.process = builder.redirectError(ProcessBuilder.Redirect.INHERIT).start();
            this.in = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
            Thread reader = new Thread(this::read, "fleet-" + name);
            reader.setDaemon(true);
            reader.start();
        }

        @SuppressWarnings("unchecked")
        private void read() {
            try (BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = out.readLine()) != null) {
                    if (line.equals("ready")) {
                        ready.countDown();
                    } else if (line.startsWith("progress ")) {
                        progress.set(Long.parseLong(line.substring(9).trim()));
                    } else if (line.startsWith("done ")) {
                        report = new ObjectMapper().readValue(line.substring(5), LinkedHashMap.class);
                        done.countDown();
                    } else {
                        System.err.println("[" + name + "] " + line);
                    }
                }
            } catch (IOException | RuntimeException e) {
                System.err.println("[" + name + "] output unreadable: " + e);
            } finally {
                ready.countDown();
                done.countDown();
            }
        }

        void send(String word) {
            try {
                in.write(word + "\n");
                in.flush();
            } catch (IOException e) {
                System.err.println("[" + name + "] cannot send " + word + ": " + e);
            }
        }

        /** Sends {@code exit}, waits for the process to end, and kills it if it does not. */
        void exit() throws InterruptedException {
            send("exit");
            if (!process.waitFor(60, TimeUnit.SECONDS)) {
                System.err.println("[" + name + "] did not exit; killing it");
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    /** The java command that runs {@link FleetMember} on this JVM's classpath. */
    static ProcessBuilder javaMember(String database, String... args) {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xms64m", "-Xmx512m", "-Dbench.database=" + database,
                "-D" + FleetMember.HOUSEKEEPING_MODE + "=" + System.getProperty(FleetMember.HOUSEKEEPING_MODE, "elected"),
                "-cp", System.getProperty("java.class.path"),
                FleetMember.class.getName()));
        command.addAll(List.of(args));
        return new ProcessBuilder(command);
    }

    /** Waits for every member's {@code ready}; false if one died or the time ran out. */
    static boolean allReady(List<Member> members, Duration within) throws InterruptedException {
        long deadline = System.nanoTime() + within.toNanos();
        for (Member m : members) {
            if (!m.ready.await(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS) || !m.process.isAlive()) {
                return false;
            }
        }
        return true;
    }

    static void allDone(List<Member> members, Duration within) throws InterruptedException {
        long deadline = System.nanoTime() + within.toNanos();
        for (Member m : members) {
            if (!m.done.await(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                System.err.println("[" + m.name + "] did not report in time");
            }
        }
    }

    /**
     * CPU seconds so far of each backend connected to {@code database} on behalf of a benchmark
     * member (the harness's own sessions excluded), by pid.
     */
    static Map<Long, Double> sessionCpu(Db db, String database) {
        List<Long> pids = db.query("SELECT pid::int8 FROM pg_stat_activity WHERE datname = '" + database + "'"
                        + " AND backend_type = 'client backend' AND application_name <> 'bench-harness'",
                row -> row.get(0, Long.class));
        Map<Long, Double> cpu = new HashMap<>();
        for (long pid : pids) {
            double seconds = CpuMeter.processSeconds(pid);
            if (!Double.isNaN(seconds)) {
                cpu.put(pid, seconds);
            }
        }
        return cpu;
    }

    /** CPU seconds the sessions open at {@code after} used since {@code before} (a session new since then counts whole). */
    static double sessionCpuSince(Map<Long, Double> before, Map<Long, Double> after) {
        double sum = 0;
        for (Map.Entry<Long, Double> e : after.entrySet()) {
            sum += e.getValue() - before.getOrDefault(e.getKey(), 0.0);
        }
        return sum;
    }

    private Fleet() {}
}
