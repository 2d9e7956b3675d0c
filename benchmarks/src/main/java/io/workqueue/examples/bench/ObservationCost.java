package io.workqueue.examples.bench;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.micrometer.core.instrument.observation.DefaultMeterObservationHandler;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import io.workqueue.WorkQueueBuilder;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.UnaryOperator;

/**
 * What observations cost the drain: {@code process()} workers draining a preloaded table with the
 * library as it was before observations were compiled in (the baseline), and with today's library
 * given no observation registry, {@link ObservationRegistry#NOOP}, and a real registry whose only
 * handler is a {@link DefaultMeterObservationHandler} on a {@link SimpleMeterRegistry}.
 *
 * <p>Each (variant, round) runs in a JVM of its own ({@link VariantDrains}), so that one variant's
 * JIT profile (the observation paths taken or not) never shapes another's compiled code, and so
 * that the baseline can run with another library jar on the class path. A round starts one JVM per
 * variant, in an order reversed from round to round so drift in the machine's load falls on every
 * variant alike; each JVM warms up, then drains every cell once from a freshly preloaded table
 * ({@link Drain}).
 * Ratios are of the medians over rounds. Results go to {@code docs/benchmarks/observations/}
 * (README.md, results.json, drain.csv). Run it through {@code benchmarks/observation-cost.sh},
 * which builds the baseline jar.
 */
public final class ObservationCost {
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    /** What a JVM hands its queues. */
    enum Variant implements VariantDrains.Variant {
        BASELINE("before observations", "baseline"),
        NONE("no registry", "none"),
        NOOP("ObservationRegistry.NOOP", "noop"),
        METER("registry + meter handler", "meter");

        final String label;
        final String id;

        Variant(String label, String id) {
            this.label = label;
            this.id = id;
        }

        @Override
        public String id() {
            return id;
        }

        @Override
        public String label() {
            return label;
        }

        @Override
        public boolean onBaseline() {
            return this == BASELINE;
        }

        /**
         * How this variant's queues are built. The registries are made here, in the variants that
         * name them, and only in the variant's own JVM, so the baseline's never calls a builder
         * method its older library lacks.
         */
        @Override
        public UnaryOperator<WorkQueueBuilder<String>> queueOptions() {
            return switch (this) {
                case BASELINE, NONE -> UnaryOperator.identity();
                case NOOP -> builder -> builder.observationRegistry(ObservationRegistry.NOOP);
                case METER -> {
                    ObservationRegistry registry = ObservationRegistry.create();
                    registry.observationConfig().observationHandler(new DefaultMeterObservationHandler(new SimpleMeterRegistry()));
                    yield builder -> builder.observationRegistry(registry);
                }
            };
        }
    }

    private ObservationCost() {}

    public static void main(String[] args) {
        Bench.exitAfter(args, ObservationCost::run);
    }

    private static void run(String[] args) throws Exception {
        // --report-from writes the report again from an earlier run's results.json (into --out), measuring nothing.
        VariantDrains.CommandLine line = VariantDrains.CommandLine.parse(args, new VariantDrains.Settings(100_000, 12,
                List.of(new DrainCell(4, 100), new DrainCell(16, 10)), 2), 5, Set.of("--report-from"),
                "ObservationCost [--n N] [--rounds R] [--drain-seconds S] [--cells 4x100,16x10] [--warmup S] [--out DIR]"
                        + " [--report-from results.json]");
        Path repo = Path.of(System.getProperty("bench.repo", ".")).toAbsolutePath().normalize();
        Path out = line.out() != null ? line.out() : repo.resolve("docs/benchmarks/observations");
        String reportFrom = line.extra().get("--report-from");
        if (line.child() != null) {
            // On the table the parent made: the baseline's older library works on today's schema.
            VariantDrains.drainOnce(VariantDrains.byId(List.of(Variant.values()), line.child()), line.round(),
                    line.settings(), false, line.result());
        } else if (reportFrom != null) {
            rerender(Path.of(reportFrom), out);
        } else {
            compare(args, line.rounds(), line.settings(), repo, out);
        }
    }

    /** The parent: start one JVM per (variant, round), then write the report. */
    private static void compare(String[] args, int rounds, VariantDrains.Settings settings, Path repo, Path out)
            throws Exception {
        VariantDrains.Jars jars = VariantDrains.Jars.fromSystemProperties();
        Db db = Db.fromEnvironment(System.getProperty("bench.database", "bench"));
        db.dropQueueTables();
        // Today's schema, made once here: the baseline's older library works on it (its statements
        // name no column it lacks) and its migration leaves a newer table alone.
        db.migrate(Pgbench.PREFIX);
        Map<String, Object> machine = Machine.describe(db, repo);
        machine.put("baseline", jars.baselineRev() + " (" + jars.baseline() + ")");
        machine.put("variant_jvm_args", String.join(" ", VariantDrains.CHILD_JVM_ARGS));
        String command = "benchmarks/observation-cost.sh " + String.join(" ", args);
        System.out.println("observation cost: " + command.trim() + " against " + db.url());
        machine.forEach((k, v) -> System.out.println("  " + k + ": " + v));

        List<Variant> forward = List.of(Variant.values());
        List<Variant> backward = new ArrayList<>(forward);
        java.util.Collections.reverse(backward);
        // Reverse the order each round, so drift in the machine's load falls on every variant.
        List<Map<String, Object>> rows = VariantDrains.run(ObservationCost.class,
                round -> round % 2 == 1 ? forward : backward, rounds, settings, jars);
        machine.put("load_average_end", Machine.loadAverage());
        report(command.trim(), machine, settings.n(), rounds, settings.capSeconds(), settings.cells(),
                jars.baselineRev(), rows, out);
    }

    /** The report of an earlier run, from its results.json. */
    private static void rerender(Path resultsJson, Path out) throws IOException {
        Map<String, Object> results = JSON.readValue(resultsJson.toFile(), new TypeReference<Map<String, Object>>() {});
        @SuppressWarnings("unchecked")
        Map<String, Object> machine = (Map<String, Object>) results.get("machine");
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> rows = (List<Map<String, Object>>) results.get("runs");
        List<DrainCell> cells = rows.stream().map(r -> new DrainCell((int) number(r, "workers"), (int) number(r, "batch")))
                .distinct().toList();
        String baseline = String.valueOf(machine.get("baseline"));
        report((String) results.get("command"), machine, ((Number) results.get("n")).intValue(),
                ((Number) results.get("rounds")).intValue(), ((Number) results.get("cap_seconds")).intValue(), cells,
                baseline.contains(" ") ? baseline.substring(0, baseline.indexOf(' ')) : baseline, rows, out);
    }

    private static void report(String command, Map<String, Object> machine, int n, int rounds, int capSeconds,
            List<DrainCell> cells, String baselineRev, List<Map<String, Object>> rows, Path out) throws IOException {
        StringBuilder md = new StringBuilder("# Observations: what they cost the drain\n\n");
        md.append(String.format(Locale.ROOT, "Generated by `%s` on %s (load average at start %s, at end %s; git %s%s)."
                        + " Per cell, round and variant: %,d keys preloaded into a fresh table, drained by W `process()`"
                        + " workers with B no-op handlers each and claims of B, until empty or for at most %d s; items/s as"
                        + " in the drain benchmark (completed rows ÷ time to the last completion). One JVM per variant and"
                        + " round (warmed up, then every cell once); the variants' order reversed each round; medians of %d"
                        + " rounds, ratios of the medians.%n%n",
                command, machine.get("date_utc"), machine.get("load_average_start"), machine.get("load_average_end"),
                machine.get("git_commit"), Boolean.TRUE.equals(machine.get("git_dirty")) ? ", uncommitted changes" : "",
                n, capSeconds, rounds));
        md.append("- **baseline**: the library built at ").append(baselineRev)
                .append(", before observations were compiled in, on the same harness and table.\n");
        md.append("- **none**: today's library, no `observationRegistry(...)` given.\n");
        md.append("- **NOOP**: today's library with `observationRegistry(ObservationRegistry.NOOP)`.\n");
        md.append("- **meter**: today's library with `ObservationRegistry.create()` and a `DefaultMeterObservationHandler`"
                + " on a `SimpleMeterRegistry`: what turning observations on costs (informational).\n\n");
        md.append("| cell | baseline items/s | none items/s | NOOP items/s | meter items/s | none ÷ baseline | NOOP ÷ baseline"
                + " | meter ÷ baseline | NOOP ÷ none |\n|---|---|---|---|---|---|---|---|---|\n");
        StringBuilder cpu = new StringBuilder("| cell | client CPU µs/item baseline / none / NOOP / meter"
                + " | server CPU µs/item baseline / none / NOOP / meter |\n|---|---|---|\n");
        StringBuilder each = new StringBuilder("| cell | variant | items/s by round | load average at each run's start |\n"
                + "|---|---|---|---|\n");
        Map<String, Object> summary = new LinkedHashMap<>();
        for (DrainCell cell : cells) {
            Map<Variant, Double> rate = new LinkedHashMap<>();
            for (Variant variant : Variant.values()) {
                List<Map<String, Object>> mine = rows(rows, cell, variant);
                rate.put(variant, median(mine, "items_per_s"));
                each.append(String.format(Locale.ROOT, "| %s | %s | %s | %s |%n", cell, variant.label,
                        String.join(", ", mine.stream().map(r -> Table.rate(number(r, "items_per_s"))).toList()),
                        String.join("; ", mine.stream().map(r -> String.valueOf(r.get("load_average"))).toList())));
            }
            double base = rate.get(Variant.BASELINE);
            md.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | %s | **%.2f×** | **%.2f×** | %.2f× | %.2f× |%n",
                    cell, Table.rate(base), Table.rate(rate.get(Variant.NONE)), Table.rate(rate.get(Variant.NOOP)),
                    Table.rate(rate.get(Variant.METER)), rate.get(Variant.NONE) / base, rate.get(Variant.NOOP) / base,
                    rate.get(Variant.METER) / base, rate.get(Variant.NOOP) / rate.get(Variant.NONE)));
            cpu.append("| ").append(cell).append(" | ").append(VariantDrains.cpuMedians(rows, cell, List.of(Variant.values()), "client_cpu_us_per_item"))
                    .append(" | ").append(VariantDrains.cpuMedians(rows, cell, List.of(Variant.values()), "server_cpu_us_per_item")).append(" |\n");
            Map<String, Object> entry = new LinkedHashMap<>();
            rate.forEach((variant, value) -> entry.put(variant.id + "_items_per_s_median", Math.round(value)));
            entry.put("none_over_baseline", Bench.round(rate.get(Variant.NONE) / base, 3));
            entry.put("noop_over_baseline", Bench.round(rate.get(Variant.NOOP) / base, 3));
            entry.put("meter_over_baseline", Bench.round(rate.get(Variant.METER) / base, 3));
            entry.put("noop_over_none", Bench.round(rate.get(Variant.NOOP) / rate.get(Variant.NONE), 3));
            entry.put("meter_over_none", Bench.round(rate.get(Variant.METER) / rate.get(Variant.NONE), 3));
            summary.put(cell.toString(), entry);
            System.out.printf(Locale.ROOT, "%s: %s%n", cell, entry);
        }
        md.append("\nRound by round: each variant's items/s over the baseline's in the same round (their JVMs ran within"
                + " minutes of each other), the median over rounds and the range; then the client's"
                + " CPU per item over the baseline's, median over rounds.\n\n").append(paired(rows, cells));
        md.append("\nCPU from /proc, as in the drain benchmark (medians): client = the variant's JVM, server = every"
                + " postgres process.\n\n").append(cpu);
        md.append("\nEvery round (also in drain.csv and results.json):\n\n").append(each);
        Map<String, Object> results = new LinkedHashMap<>();
        results.put("machine", machine);
        results.put("command", command);
        results.put("n", n);
        results.put("rounds", rounds);
        results.put("cap_seconds", capSeconds);
        results.put("summary", summary);
        results.put("runs", rows);
        VariantDrains.writeReport(out, md, machine, results, rows, "drain.csv");
    }

    /**
     * Ratios of each variant to the baseline within a round, summarised over rounds: on a shared
     * machine the load shifts between rounds far more than within one, so a round's own ratio
     * cancels much of it.
     */
    private static String paired(List<Map<String, Object>> rows, List<DrainCell> cells) {
        StringBuilder out = new StringBuilder("| cell | none ÷ baseline | NOOP ÷ baseline | meter ÷ baseline"
                + " | client CPU/item none / NOOP / meter ÷ baseline |\n|---|---|---|---|---|\n");
        for (DrainCell cell : cells) {
            out.append("| ").append(cell);
            List<String> cpu = new ArrayList<>();
            for (Variant variant : List.of(Variant.NONE, Variant.NOOP, Variant.METER)) {
                List<Double> rates = new ArrayList<>();
                List<Double> cpus = new ArrayList<>();
                for (Map<String, Object> row : rows(rows, cell, variant)) {
                    rows(rows, cell, Variant.BASELINE).stream()
                            .filter(base -> number(base, "round") == number(row, "round"))
                            .findFirst()
                            .ifPresent(base -> {
                                rates.add(number(row, "items_per_s") / number(base, "items_per_s"));
                                cpus.add(number(row, "client_cpu_us_per_item") / number(base, "client_cpu_us_per_item"));
                            });
                }
                out.append(String.format(Locale.ROOT, " | %.2f× (%.2f–%.2f)", Percentiles.median(rates),
                        rates.stream().mapToDouble(Double::doubleValue).min().orElse(Double.NaN),
                        rates.stream().mapToDouble(Double::doubleValue).max().orElse(Double.NaN)));
                cpu.add(String.format(Locale.ROOT, "%.2f", Percentiles.median(cpus)));
            }
            out.append(" | ").append(String.join(" / ", cpu)).append(" |\n");
        }
        return out.toString();
    }

    private static List<Map<String, Object>> rows(List<Map<String, Object>> rows, DrainCell cell, Variant variant) {
        return VariantDrains.rows(rows, cell, variant.id);
    }

    private static double median(List<Map<String, Object>> rows, String field) {
        return VariantDrains.median(rows, field);
    }

    private static double number(Map<String, Object> row, String field) {
        return VariantDrains.number(row, field);
    }
}
