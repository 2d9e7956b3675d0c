package io.workqueue.examples.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The {@code process()} drain of this checkout's library against the library at an earlier commit,
 * in one run: what a user upgrading from that commit gets. Issue 26 moved handlers off the driver's
 * threads and asked that the drain stay at 0.95× or more of what it was; {@link HandlerThreads}
 * measures the hand-off alone (this library's two handler schedulers), this measures the default a
 * user upgrading gets against the default they had.
 *
 * <p>Two versions of the library cannot share a JVM, so {@code benchmarks/drain-since.sh} runs
 * each (variant, round) in a JVM of its own, alternating the variants in a rotating order, and
 * calls {@code measure} once per JVM: it warms the JIT up on the variant's mode, then drains each
 * cell once from a freshly preloaded table ({@link Drain}), and appends one JSON line per cell to
 * {@code runs.jsonl}. {@code report} then writes README.md, results.json and runs.csv from them:
 * medians over the rounds, ratios of the medians.
 *
 * <p>Variants: {@code baseline} ({@code process()} with default options, on the earlier jar),
 * {@code pool} (the same on this checkout: handlers on the worker's own pool) and {@code driver}
 * (this checkout with {@code handlerScheduler(Schedulers.immediate())}: handlers on the driver's
 * threads, as the earlier library ran them).
 */
public final class DrainSince {
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    private static final List<String> VARIANTS = List.of("baseline", "pool", "driver");

    private DrainSince() {}

    public static void main(String[] args) {
        Bench.exitAfter(args, DrainSince::run);
    }

    private static void run(String[] args) throws IOException {
        if (args.length == 0 || !(args[0].equals("measure") || args[0].equals("report"))) {
            throw new IllegalArgumentException("usage: DrainSince measure --variant V --round R [--cells 4x100,16x10,4x1]"
                    + " [--n N] [--drain-seconds S] [--warmup S] --out DIR | DrainSince report --baseline REV"
                    + " --command TEXT --out DIR");
        }
        Map<String, String> options = new LinkedHashMap<>();
        for (int i = 1; i + 1 < args.length; i += 2) {
            options.put(args[i], args[i + 1]);
        }
        Path out = Path.of(required(options, "--out"));
        if (args[0].equals("measure")) {
            measure(options, out);
        } else {
            report(options, out);
        }
    }

    private static String required(Map<String, String> options, String name) {
        String value = options.get(name);
        if (value == null) {
            throw new IllegalArgumentException("missing " + name);
        }
        return value;
    }

    /** One JVM: warm up on the variant's mode, then one run of each cell, appended to runs.jsonl. */
    private static void measure(Map<String, String> options, Path out) throws IOException {
        String variant = required(options, "--variant");
        if (!VARIANTS.contains(variant)) {
            throw new IllegalArgumentException("--variant is one of " + VARIANTS + ", not " + variant);
        }
        int round = Integer.parseInt(required(options, "--round"));
        List<DrainCell> cells = DrainCell.parseAll(options.getOrDefault("--cells", "4x100,16x10,4x1"));
        int n = Integer.parseInt(options.getOrDefault("--n", "200000"));
        int capSeconds = Integer.parseInt(options.getOrDefault("--drain-seconds", "6"));
        int warmupSeconds = Integer.parseInt(options.getOrDefault("--warmup", "8"));
        // The earlier jar has no handlerScheduler; its process() called handlers on the driver's threads.
        Drain.Mode mode = variant.equals("driver") ? Drain.Mode.PROCESS_DRIVER : Drain.Mode.PROCESS;

        Db db = Db.fromEnvironment(System.getProperty("bench.database", "bench"));
        // The variants' libraries may migrate the table to different schema versions: start afresh.
        db.dropQueueTables();
        Drain drain = Drain.libraryOnly(db, n, capSeconds);
        System.out.printf(Locale.ROOT, "round %d, %s (%s):%n", round, variant, mode.label);
        drain.warmUp(warmupSeconds, List.of(mode));
        Files.createDirectories(out);
        for (DrainCell cell : cells) {
            Drain.Run run = drain.run(mode, cell.workers(), cell.batch(), round);
            double[] perItem = run.cpu().microsPerItem(run.items());
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("variant", variant);
            row.put("mode", mode.id);
            row.put("workers", cell.workers());
            row.put("batch", cell.batch());
            row.put("round", round);
            row.put("items", run.items());
            row.put("seconds", Bench.round(run.seconds(), 3));
            row.put("items_per_s", Math.round(run.itemsPerSecond()));
            row.put("server_cpu_us_per_item", Bench.round(perItem[0], 1));
            row.put("client_cpu_us_per_item", Bench.round(perItem[1], 1));
            row.put("machine_busy", Bench.round(run.cpu().machineBusy(), 3));
            Files.writeString(out.resolve("runs.jsonl"), new ObjectMapper().writeValueAsString(row) + "\n",
                    StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        }
        db.dropQueueTables();
    }

    /** Medians per cell and variant, their ratios, and the files. */
    @SuppressWarnings("unchecked")
    private static void report(Map<String, String> options, Path out) throws IOException {
        String baseline = required(options, "--baseline");
        String command = required(options, "--command");
        List<Map<String, Object>> rows = new ArrayList<>();
        for (String line : Files.readAllLines(out.resolve("runs.jsonl"))) {
            if (!line.isBlank()) {
                rows.add(JSON.readValue(line, Map.class));
            }
        }
        if (rows.isEmpty()) {
            throw new IllegalStateException("no runs in " + out.resolve("runs.jsonl"));
        }
        Path repo = Path.of(System.getProperty("bench.repo", ".")).toAbsolutePath().normalize();
        Db db = Db.fromEnvironment(System.getProperty("bench.database", "bench"));
        Map<String, Object> machine = Machine.describe(db, repo);
        machine.remove("load_average_start");
        machine.put("load_average_at_report", Machine.loadAverage());
        int rounds = rows.stream().mapToInt(r -> ((Number) r.get("round")).intValue()).max().orElse(0);

        List<DrainCell> cells = rows.stream()
                .map(r -> new DrainCell(((Number) r.get("workers")).intValue(), ((Number) r.get("batch")).intValue()))
                .distinct().toList();
        StringBuilder md = new StringBuilder("# The drain since " + baseline + ": what upgrading costs `process()`\n\n");
        md.append(String.format(Locale.ROOT, "Generated by `%s` on %s (git %s%s; load average when reported %s)."
                        + " Per cell, round and variant: keys preloaded into a fresh table, drained by W `process()`"
                        + " workers with B no-op handlers each and claims of B, until empty or for at most the cap;"
                        + " items/s as in the drain benchmark (completed rows ÷ time to the last completion). Each"
                        + " variant and round ran in a JVM of its own (two versions of the library cannot share one),"
                        + " warmed up on its mode first; the variants' order rotated from round to round. Medians of"
                        + " %d rounds, ratios of the medians.%n%n",
                command, machine.get("date_utc"), machine.get("git_commit"),
                Boolean.TRUE.equals(machine.get("git_dirty")) ? ", uncommitted changes" : "",
                machine.get("load_average_at_report"), rounds));
        md.append("- **baseline**: the library at `" + baseline + "`, `process()` with default options: its handlers"
                + " ran on the driver's threads.\n");
        md.append("- **pool**: this checkout's `process()` with default options: handlers on the worker's own pool.\n");
        md.append("- **driver**: this checkout with `WorkerOptions.handlerScheduler(Schedulers.immediate())`:"
                + " handlers on the driver's threads, as the baseline ran them.\n\n");
        md.append("pool ÷ baseline is what a user upgrading gets (issue 26's target: ≥ 0.95×); pool ÷ driver is the"
                + " hand-off's own cost within this checkout (what `handler-scheduler.sh` measures); driver ÷"
                + " baseline is what everything else since the baseline changed.\n\n");
        md.append("| cell | baseline items/s | pool items/s | driver items/s | **pool ÷ baseline** | pool ÷ driver"
                + " | driver ÷ baseline | client CPU µs/item baseline / pool / driver"
                + " | server CPU µs/item baseline / pool / driver |\n|---|---|---|---|---|---|---|---|---|\n");
        Map<String, Object> summary = new LinkedHashMap<>();
        for (DrainCell cell : cells) {
            Map<String, List<Map<String, Object>>> byVariant = new LinkedHashMap<>();
            for (String variant : VARIANTS) {
                byVariant.put(variant, rows.stream().filter(r -> variant.equals(r.get("variant"))
                        && ((Number) r.get("workers")).intValue() == cell.workers()
                        && ((Number) r.get("batch")).intValue() == cell.batch()).toList());
            }
            double base = median(byVariant.get("baseline"), "items_per_s");
            double pool = median(byVariant.get("pool"), "items_per_s");
            double driver = median(byVariant.get("driver"), "items_per_s");
            md.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | **%.2f×** | %.2f× | %.2f× | %s | %s |%n", cell,
                    Table.rate(base), Table.rate(pool), Table.rate(driver), pool / base, pool / driver, driver / base,
                    cpu(byVariant, "client_cpu_us_per_item"), cpu(byVariant, "server_cpu_us_per_item")));
            Map<String, Object> entry = new LinkedHashMap<>();
            entry.put("baseline_items_per_s_median", Math.round(base));
            entry.put("pool_items_per_s_median", Math.round(pool));
            entry.put("driver_items_per_s_median", Math.round(driver));
            entry.put("pool_over_baseline", Bench.round(pool / base, 3));
            entry.put("pool_over_driver", Bench.round(pool / driver, 3));
            entry.put("driver_over_baseline", Bench.round(driver / base, 3));
            for (String variant : VARIANTS) {
                entry.put(variant + "_rounds", byVariant.get(variant).stream().map(r -> r.get("items_per_s")).toList());
            }
            summary.put(cell.toString(), entry);
            System.out.printf(Locale.ROOT, "%s: baseline %.0f, pool %.0f, driver %.0f items/s; pool ÷ baseline %.3f,"
                    + " pool ÷ driver %.3f%n", cell, base, pool, driver, pool / base, pool / driver);
        }
        md.append("\nCPU from /proc, as in the drain benchmark: client = the measuring JVM, server = every postgres"
                + " process. Every run is in runs.csv and results.json.\n\n");
        md.append("## Machine\n\n| | |\n|---|---|\n");
        machine.forEach((k, v) -> md.append("| ").append(k).append(" | ").append(v).append(" |\n"));

        Map<String, Object> results = new LinkedHashMap<>();
        results.put("machine", machine);
        results.put("command", command);
        results.put("baseline", baseline);
        results.put("rounds", rounds);
        results.put("summary", summary);
        results.put("runs", rows);
        JSON.writeValue(out.resolve("results.json").toFile(), results);
        Report.csv(out.resolve("runs.csv"), rows);
        Files.writeString(out.resolve("README.md"), md);
        System.out.println();
        System.out.println(md);
        System.out.println("Results in " + out);
    }

    private static double median(List<Map<String, Object>> rows, String column) {
        return Percentiles.median(rows.stream().map(r -> ((Number) r.get(column)).doubleValue()).toList());
    }

    private static String cpu(Map<String, List<Map<String, Object>>> byVariant, String column) {
        return String.format(Locale.ROOT, "%.1f / %.1f / %.1f", median(byVariant.get("baseline"), column),
                median(byVariant.get("pool"), column), median(byVariant.get("driver"), column));
    }
}
