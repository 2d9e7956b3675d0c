package io.workqueue.examples.bench;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The {@code process()} drain of this checkout's library against the library at an earlier commit,
 * in one run: what a user upgrading from that commit gets. Issue 26 moved handlers off the driver's
 * threads and asked that the drain stay at 0.95× or more of what it was; {@link HandlerThreads}
 * measures the hand-off alone (this library's two handler schedulers), this measures the default a
 * user upgrading gets against the default they had.
 *
 * <p>Two versions of the library cannot share a JVM: each (variant, round) runs in one of its own
 * ({@link VariantDrains}), the variants' order rotating from round to round so that each takes
 * each place in turn. Each child drops the queue tables first, so that every version drains a
 * schema its own migrations made. Results: README.md, results.json and runs.csv, medians over the
 * rounds, ratios of the medians. Run it through {@code benchmarks/drain-since.sh}, which builds the
 * earlier jar.
 */
public final class DrainSince {
    /** Which library drains, and where its handlers run. */
    record Variant(String id, String label, boolean onBaseline, Drain.Mode mode) implements VariantDrains.Variant {
        /** The earlier jar's {@code process()} with default options: handlers on the driver's threads. */
        static final Variant BASELINE = new Variant("baseline", "the earlier library, its defaults", true, Drain.Mode.PROCESS);
        /** This checkout's default: handlers on the worker's own pool. */
        static final Variant POOL = new Variant("pool", "this library, its defaults (the worker's pool)", false,
                Drain.Mode.PROCESS);
        /** This checkout with {@code handlerScheduler(Schedulers.immediate())}: as the baseline ran them. */
        static final Variant DRIVER = new Variant("driver", "this library, handlers on the driver's threads", false,
                Drain.Mode.PROCESS_DRIVER);
        /** Every variant, in the order the first round runs them and the report lists them. */
        static final List<Variant> ALL = List.of(BASELINE, POOL, DRIVER);
    }

    private DrainSince() {}

    public static void main(String[] args) {
        Bench.exitAfter(args, DrainSince::run);
    }

    private static void run(String[] args) throws Exception {
        VariantDrains.CommandLine line = VariantDrains.CommandLine.parse(args, new VariantDrains.Settings(200_000, 6,
                List.of(new DrainCell(4, 100), new DrainCell(16, 10), new DrainCell(4, 1)), 8), 7, Set.of(),
                "DrainSince [--n N] [--rounds R] [--drain-seconds S] [--warmup S] [--cells 4x100,16x10,4x1] [--out DIR]");
        VariantDrains.Settings settings = line.settings();
        if (line.child() != null) {
            VariantDrains.drainOnce(VariantDrains.byId(Variant.ALL, line.child()), line.round(), settings, true,
                    line.result());
            return;
        }
        Path repo = Path.of(System.getProperty("bench.repo", ".")).toAbsolutePath().normalize();
        int rounds = line.rounds();
        VariantDrains.Jars jars = VariantDrains.Jars.fromSystemProperties();
        Path out = line.out() != null ? line.out()
                : repo.resolve("docs/benchmarks/handler-scheduler/since-" + jars.baselineRev());
        Db db = Db.fromEnvironment(System.getProperty("bench.database", "bench"));
        Map<String, Object> machine = Machine.describe(db, repo);
        machine.put("baseline", jars.baselineRev() + " (" + jars.baseline() + ")");
        machine.put("variant_jvm_args", String.join(" ", VariantDrains.CHILD_JVM_ARGS));
        String command = ("benchmarks/drain-since.sh " + jars.baselineRev() + " " + String.join(" ", args)).trim();
        System.out.println("drain since " + jars.baselineRev() + ": " + command + " against " + db.url());
        List<Map<String, Object>> rows = VariantDrains.run(DrainSince.class,
                round -> rotated(Variant.ALL, round - 1), rounds, settings, jars);
        db.dropQueueTables();
        machine.put("load_average_end", Machine.loadAverage());
        report(command, machine, jars.baselineRev(), rounds, settings, rows, out);
    }

    /** {@code variants} starting at index {@code by}: round after round, each takes each place in turn. */
    static <T> List<T> rotated(List<T> variants, int by) {
        List<T> order = new ArrayList<>();
        for (int i = 0; i < variants.size(); i++) {
            order.add(variants.get((by + i) % variants.size()));
        }
        return order;
    }

    /** Medians per cell and variant, their ratios, and the files. */
    private static void report(String command, Map<String, Object> machine, String baselineRev, int rounds,
            VariantDrains.Settings settings, List<Map<String, Object>> rows, Path out) throws IOException {
        StringBuilder md = new StringBuilder("# The drain since " + baselineRev + ": what upgrading does to `process()`\n\n");
        md.append(String.format(Locale.ROOT, "Generated by `%s` on %s (load average at start %s, at end %s; git %s%s)."
                        + " Per cell, round and variant: %,d keys preloaded into a fresh table, drained by W `process()`"
                        + " workers with B no-op handlers each and claims of B, until empty or for at most %d s; items/s"
                        + " as in the drain benchmark (completed rows ÷ time to the last completion). Each variant and"
                        + " round ran in a JVM of its own (two versions of the library cannot share one), on a schema its"
                        + " own library made, warmed up on its mode for %d s per batch size first; the variants' order"
                        + " rotated from round to round. Medians of %d rounds, ratios of the medians.%n%n",
                command, machine.get("date_utc"), machine.get("load_average_start"), machine.get("load_average_end"),
                machine.get("git_commit"), Boolean.TRUE.equals(machine.get("git_dirty")) ? ", uncommitted changes" : "",
                settings.n(), settings.capSeconds(), settings.warmupSeconds(), rounds));
        md.append("- **baseline**: the library at `" + baselineRev + "`, `process()` with default options: its handlers"
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
        StringBuilder each = new StringBuilder("| cell | variant | items/s by round |\n|---|---|---|\n");
        Map<String, Object> summary = new LinkedHashMap<>();
        for (DrainCell cell : settings.cells()) {
            Map<Variant, Double> rate = new LinkedHashMap<>();
            for (Variant variant : Variant.ALL) {
                List<Map<String, Object>> mine = VariantDrains.rows(rows, cell, variant.id());
                rate.put(variant, VariantDrains.median(mine, "items_per_s"));
                each.append(String.format(Locale.ROOT, "| %s | %s | %s |%n", cell, variant.id(), String.join(", ",
                        mine.stream().map(r -> Table.rate(VariantDrains.number(r, "items_per_s"))).toList())));
            }
            double base = rate.get(Variant.BASELINE);
            double pool = rate.get(Variant.POOL);
            double driver = rate.get(Variant.DRIVER);
            md.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | **%.2f×** | %.2f× | %.2f× | %s | %s |%n", cell,
                    Table.rate(base), Table.rate(pool), Table.rate(driver), pool / base, pool / driver, driver / base,
                    VariantDrains.cpuMedians(rows, cell, Variant.ALL, "client_cpu_us_per_item"),
                    VariantDrains.cpuMedians(rows, cell, Variant.ALL, "server_cpu_us_per_item")));
            Map<String, Object> entry = new LinkedHashMap<>();
            rate.forEach((variant, value) -> entry.put(variant.id() + "_items_per_s_median", Math.round(value)));
            entry.put("pool_over_baseline", Bench.round(pool / base, 3));
            entry.put("pool_over_driver", Bench.round(pool / driver, 3));
            entry.put("driver_over_baseline", Bench.round(driver / base, 3));
            summary.put(cell.toString(), entry);
            System.out.printf(Locale.ROOT, "%s: %s%n", cell, entry);
        }
        md.append("\nCPU from /proc, as in the drain benchmark (medians): client = the variant's JVM, server = every"
                + " postgres process.\n\nEvery round (also in runs.csv and results.json):\n\n").append(each);
        Map<String, Object> results = new LinkedHashMap<>();
        results.put("machine", machine);
        results.put("command", command);
        results.put("baseline", baselineRev);
        results.put("n", settings.n());
        results.put("rounds", rounds);
        results.put("cap_seconds", settings.capSeconds());
        results.put("warmup_seconds", settings.warmupSeconds());
        results.put("summary", summary);
        results.put("runs", rows);
        VariantDrains.writeReport(out, md, machine, results, rows, "runs.csv");
    }
}
