package io.workqueue.examples.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What running handlers off the driver's threads costs the drain: {@code process()} with the
 * default handler scheduler (a pool of the worker's own) against the same worker with
 * {@code handlerScheduler(Schedulers.immediate())} (handlers on the driver's threads, no hand-off),
 * in one run. Each cell alternates the two, the first of each round swapped from round to round,
 * every run from a freshly preloaded table ({@link Drain}); the ratio is of the medians. Results go
 * to {@code docs/benchmarks/handler-scheduler/} (README.md, results.json, drain.csv). Run it
 * through {@code benchmarks/handler-scheduler.sh}.
 */
public final class HandlerThreads {
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    private static final Drain.Mode POOL = Drain.Mode.PROCESS;
    private static final Drain.Mode DRIVER = Drain.Mode.PROCESS_DRIVER;

    /** One cell of the grid: W workers, each with B handlers and claims of B. */
    private record Cell(int workers, int batch) {
        static Cell parse(String text) {
            String[] parts = text.trim().split("x");
            return new Cell(Integer.parseInt(parts[0]), Integer.parseInt(parts[1]));
        }

        @Override
        public String toString() {
            return "W=" + workers + " B=" + batch;
        }
    }

    private HandlerThreads() {}

    public static void main(String[] args) throws Exception {
        int status = 1;
        try {
            run(args);
            status = 0;
        } finally {
            System.exit(status);
        }
    }

    private static void run(String[] args) throws IOException {
        int n = 200_000;
        int rounds = 5;
        int capSeconds = 6;
        List<Cell> cells = List.of(new Cell(4, 100), new Cell(16, 10), new Cell(4, 1));
        Path repo = Path.of(System.getProperty("bench.repo", ".")).toAbsolutePath().normalize();
        Path out = repo.resolve("docs/benchmarks/handler-scheduler");
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--n" -> n = Integer.parseInt(args[i + 1]);
                case "--rounds" -> rounds = Integer.parseInt(args[i + 1]);
                case "--drain-seconds" -> capSeconds = Integer.parseInt(args[i + 1]);
                case "--cells" -> cells = Arrays.stream(args[i + 1].split(",")).map(Cell::parse).toList();
                case "--out" -> out = Path.of(args[i + 1]);
                default -> throw new IllegalArgumentException("usage: HandlerThreads [--n N] [--rounds R]"
                        + " [--drain-seconds S] [--cells 4x100,16x10,4x1] [--out DIR]; got " + args[i]);
            }
        }
        Db db = Db.fromEnvironment(System.getProperty("bench.database", "bench"));
        db.dropQueueTables();
        Map<String, Object> machine = Machine.describe(db, repo);
        String command = "benchmarks/handler-scheduler.sh " + String.join(" ", args);
        System.out.println("handler scheduler cost: " + command.trim() + " against " + db.url());
        machine.forEach((k, v) -> System.out.println("  " + k + ": " + v));

        Drain drain = new Drain(db, new Pgbench(db), n, capSeconds);
        drain.warmUp(2, List.of(POOL, DRIVER));
        List<Drain.Run> runs = new ArrayList<>();
        for (Cell cell : cells) {
            for (int round = 1; round <= rounds; round++) {
                // Swap which goes first each round, so drift in the machine's load falls on both.
                List<Drain.Mode> order = round % 2 == 1 ? List.of(POOL, DRIVER) : List.of(DRIVER, POOL);
                for (Drain.Mode mode : order) {
                    runs.add(drain.run(mode, cell.workers(), cell.batch(), round));
                }
            }
        }
        machine.put("load_average_end", Machine.loadAverage());

        List<Map<String, Object>> rows = new ArrayList<>();
        for (Drain.Run run : runs) {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("mode", run.mode().id);
            row.put("workers", run.workers());
            row.put("batch", run.batch());
            row.put("round", run.repeat());
            row.put("items", run.items());
            row.put("seconds", Bench.round(run.seconds(), 3));
            row.put("items_per_s", Math.round(run.itemsPerSecond()));
            double[] perItem = run.cpu().microsPerItem(run.items());
            row.put("server_cpu_us_per_item", Bench.round(perItem[0], 1));
            row.put("client_cpu_us_per_item", Bench.round(perItem[1], 1));
            row.put("machine_busy", Bench.round(run.cpu().machineBusy(), 3));
            rows.add(row);
        }

        StringBuilder md = new StringBuilder("# Handlers off the driver's threads: what the hand-off costs the drain\n\n");
        md.append(String.format(Locale.ROOT, "Generated by `%s` on %s (load average at start %s, at end %s; git %s%s)."
                        + " Per cell and round: %,d keys preloaded into a fresh table, drained by W `process()` workers"
                        + " with B no-op handlers each and claims of B, until empty or for at most %d s; items/s as in"
                        + " the drain benchmark (completed rows ÷ time to the last completion). The two modes alternate,"
                        + " the first swapped each round; medians of %d rounds, ratios of the medians.%n%n",
                command.trim(), machine.get("date_utc"), machine.get("load_average_start"), machine.get("load_average_end"),
                machine.get("git_commit"), Boolean.TRUE.equals(machine.get("git_dirty")) ? ", uncommitted changes" : "",
                n, capSeconds, rounds));
        md.append("- **worker's pool** (the default): a claim's handler calls are handed to the worker's own pool (at"
                + " most B threads), one thread making them back to back; their completions come back to the worker's"
                + " loop.\n");
        md.append("- **driver's threads**: `WorkerOptions.handlerScheduler(Schedulers.immediate())`: handlers called"
                + " in the worker's loop, on the thread that delivered the claim (what `process()` did before it moved"
                + " handlers off those threads).\n\n");
        md.append("| cell | worker's pool items/s | driver's threads items/s | pool ÷ driver | client CPU µs/item pool / driver"
                + " | server CPU µs/item pool / driver | rounds (pool; driver) |\n|---|---|---|---|---|---|---|\n");
        Map<String, Object> summary = new LinkedHashMap<>();
        for (Cell cell : cells) {
            List<Drain.Run> pool = runs.stream().filter(r -> r.mode() == POOL && matches(r, cell)).toList();
            List<Drain.Run> driver = runs.stream().filter(r -> r.mode() == DRIVER && matches(r, cell)).toList();
            double poolRate = Percentiles.median(pool.stream().map(Drain.Run::itemsPerSecond).toList());
            double driverRate = Percentiles.median(driver.stream().map(Drain.Run::itemsPerSecond).toList());
            double ratio = poolRate / driverRate;
            md.append(String.format(Locale.ROOT, "| %s | %s | %s | **%.2f×** | %.1f / %.1f | %.1f / %.1f | %s; %s |%n",
                    cell, Table.rate(poolRate), Table.rate(driverRate), ratio,
                    medianCpu(pool, 1), medianCpu(driver, 1), medianCpu(pool, 0), medianCpu(driver, 0),
                    rates(pool), rates(driver)));
            Map<String, Object> entry = new LinkedHashMap<>();
            entry.put("pool_items_per_s_median", Math.round(poolRate));
            entry.put("driver_items_per_s_median", Math.round(driverRate));
            entry.put("pool_over_driver", Bench.round(ratio, 3));
            summary.put(cell.toString(), entry);
            System.out.printf(Locale.ROOT, "%s: worker's pool %.0f items/s, driver's threads %.0f items/s, ratio %.3f%n",
                    cell, poolRate, driverRate, ratio);
        }
        md.append("\nCPU from /proc, as in the drain benchmark: client = this JVM, server = every postgres process."
                + " Each round's items/s is listed in drain.csv and results.json.\n\n");
        md.append("## Machine\n\n| | |\n|---|---|\n");
        machine.forEach((k, v) -> md.append("| ").append(k).append(" | ").append(v).append(" |\n"));

        Files.createDirectories(out);
        Map<String, Object> results = new LinkedHashMap<>();
        results.put("machine", machine);
        results.put("command", command.trim());
        results.put("n", n);
        results.put("rounds", rounds);
        results.put("cap_seconds", capSeconds);
        results.put("summary", summary);
        results.put("runs", rows);
        JSON.writeValue(out.resolve("results.json").toFile(), results);
        Report.csv(out.resolve("drain.csv"), rows);
        Files.writeString(out.resolve("README.md"), md);
        System.out.println();
        System.out.println(md);
        System.out.println("Results in " + out);
    }

    private static boolean matches(Drain.Run run, Cell cell) {
        return run.workers() == cell.workers() && run.batch() == cell.batch();
    }

    private static double medianCpu(List<Drain.Run> runs, int side) {
        return Percentiles.median(runs.stream().map(r -> r.cpu().microsPerItem(r.items())[side]).toList());
    }

    private static String rates(List<Drain.Run> runs) {
        return String.join(", ", runs.stream().map(r -> Table.rate(r.itemsPerSecond())).toList());
    }
}
