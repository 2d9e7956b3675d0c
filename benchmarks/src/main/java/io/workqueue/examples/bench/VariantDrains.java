package io.workqueue.examples.bench;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.workqueue.WorkQueueBuilder;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.IntFunction;
import java.util.function.UnaryOperator;
import org.jspecify.annotations.Nullable;

/**
 * The {@code process()} drain run several ways, each (variant, round) in a JVM of its own: so that
 * one variant's JIT profile never shapes another's compiled code, and so that a variant can run
 * on another library jar (an earlier version, the <em>baseline</em>). The parent starts the JVMs one
 * after another in the order a round asks for; each child warms up, drains every cell once from a
 * freshly preloaded table ({@link Drain}) and writes its rows, which the parent gathers. Used by
 * {@link ObservationCost} and {@link DrainSince}.
 *
 * <p>A child is the benchmark's own main, started with {@code --child ID --round R --result FILE}
 * and the drain's {@code --n}, {@code --drain-seconds}, {@code --cells} and {@code --warmup}: it
 * calls {@link #drainOnce}. The baseline jar replaces this checkout's on a baseline variant's class
 * path; the bench classes drive it through API both versions have.
 */
final class VariantDrains {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final ObjectMapper REPORT_JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    /** Every child's JVM options (the parent's own, which the machine tables show, differ). */
    static final List<String> CHILD_JVM_ARGS = List.of("-Xms512m", "-Xmx2g", "-Djava.awt.headless=true");

    /** One way of draining. */
    interface Variant {
        /** The name on the command line and in the rows. */
        String id();

        /** What the reports call it. */
        String label();

        /** Whether it runs on the baseline's jar instead of this checkout's. */
        default boolean onBaseline() {
            return false;
        }

        /** The drain's mode. */
        default Drain.Mode mode() {
            return Drain.Mode.PROCESS;
        }

        /** How its queues are built: called in its own JVM only, so a baseline never meets newer API. */
        default UnaryOperator<WorkQueueBuilder<String>> queueOptions() {
            return UnaryOperator.identity();
        }
    }

    /** The drain's settings, the same in every child. */
    record Settings(int n, int capSeconds, List<DrainCell> cells, int warmupSeconds) {
        List<String> childArgs() {
            return List.of("--n", Integer.toString(n), "--drain-seconds", Integer.toString(capSeconds), "--cells",
                    String.join(",", cells.stream().map(DrainCell::arg).toList()), "--warmup",
                    Integer.toString(warmupSeconds));
        }
    }

    /**
     * A main's command line: the drain's settings, the rounds and the output folder, and, in a
     * child, the variant, round and result file the parent passed ({@link #run}); options of the
     * main's own land in {@code extra}.
     */
    record CommandLine(Settings settings, int rounds, @Nullable Path out, @Nullable String child, int round,
            @Nullable Path result, Map<String, String> extra) {
        /**
         * Parses {@code --n}, {@code --rounds}, {@code --drain-seconds}, {@code --warmup},
         * {@code --cells}, {@code --out}, the child's {@code --child}, {@code --round} and
         * {@code --result}, and the {@code extraOptions}, over the defaults given; anything else
         * fails with {@code usage}.
         */
        static CommandLine parse(String[] args, Settings defaults, int rounds, Set<String> extraOptions, String usage) {
            int n = defaults.n();
            int capSeconds = defaults.capSeconds();
            int warmupSeconds = defaults.warmupSeconds();
            List<DrainCell> cells = defaults.cells();
            Path out = null;
            String child = null;
            int round = 0;
            Path result = null;
            Map<String, String> extra = new LinkedHashMap<>();
            for (int i = 0; i + 1 < args.length; i += 2) {
                String value = args[i + 1];
                switch (args[i]) {
                    case "--n" -> n = Integer.parseInt(value);
                    case "--rounds" -> rounds = Integer.parseInt(value);
                    case "--drain-seconds" -> capSeconds = Integer.parseInt(value);
                    case "--warmup" -> warmupSeconds = Integer.parseInt(value);
                    case "--cells" -> cells = DrainCell.parseAll(value);
                    case "--out" -> out = Path.of(value);
                    case "--child" -> child = value;
                    case "--round" -> round = Integer.parseInt(value);
                    case "--result" -> result = Path.of(value);
                    default -> {
                        if (!extraOptions.contains(args[i])) {
                            throw new IllegalArgumentException("usage: " + usage + "; got " + args[i]);
                        }
                        extra.put(args[i], value);
                    }
                }
            }
            return new CommandLine(new Settings(n, capSeconds, cells, warmupSeconds), rounds, out, child, round, result,
                    extra);
        }
    }

    /** Where the baseline's jar and this checkout's are, as the bench scripts pass them. */
    record Jars(String library, String baseline, String baselineRev) {
        static Jars fromSystemProperties() {
            return new Jars(required("bench.library.jar"), required("bench.baseline.jar"),
                    System.getProperty("bench.baseline.rev", "?"));
        }

        private static String required(String property) {
            String value = System.getProperty(property);
            if (value == null || value.isBlank()) {
                throw new IllegalStateException("-D" + property + " is not set: run this through its script in benchmarks/");
            }
            return value;
        }
    }

    private VariantDrains() {}

    /**
     * In a child: warms the JIT up on the variant's mode, drains every cell once, returns a row per
     * cell. With {@code ownSchema} the queue tables are dropped first, so the variant's own library
     * makes its own schema (versions may differ in indexes); otherwise it works on the table the
     * parent made.
     */
    static List<Map<String, Object>> drainOnce(Variant variant, int round, Settings settings, boolean ownSchema) {
        Db db = Db.fromEnvironment(System.getProperty("bench.database", "bench"));
        if (ownSchema) {
            db.dropQueueTables();
        }
        Drain drain = Drain.libraryOnly(db, settings.n(), settings.capSeconds(), variant.queueOptions());
        System.out.printf(Locale.ROOT, "round %d, %s:%n", round, variant.label());
        drain.warmUp(settings.warmupSeconds(), List.of(variant.mode()));
        List<Map<String, Object>> rows = new ArrayList<>();
        for (DrainCell cell : settings.cells()) {
            String load = Machine.loadAverage();
            Drain.Run run = drain.run(variant.mode(), cell.workers(), cell.batch(), round);
            double[] perItem = run.cpu().microsPerItem(run.items());
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("variant", variant.id());
            row.put("workers", run.workers());
            row.put("batch", run.batch());
            row.put("round", round);
            row.put("items", run.items());
            row.put("seconds", Bench.round(run.seconds(), 3));
            row.put("items_per_s", Math.round(run.itemsPerSecond()));
            row.put("server_cpu_us_per_item", Bench.round(perItem[0], 1));
            row.put("client_cpu_us_per_item", Bench.round(perItem[1], 1));
            row.put("machine_busy", Bench.round(run.cpu().machineBusy(), 3));
            row.put("load_average", load);
            rows.add(row);
        }
        return rows;
    }

    /** In a child: {@link #drainOnce}, its rows written to {@code result} for the parent. */
    static void drainOnce(Variant variant, int round, Settings settings, boolean ownSchema, Path result)
            throws IOException {
        JSON.writeValue(result.toFile(), drainOnce(variant, round, settings, ownSchema));
    }

    /**
     * In the parent: for each round, one child per variant in {@code order.apply(round)}, each
     * running {@code main} on its class path; returns every child's rows. A child that fails fails
     * the run.
     */
    static <V extends Variant> List<Map<String, Object>> run(Class<?> main, IntFunction<List<V>> order, int rounds,
            Settings settings, Jars jars) throws IOException, InterruptedException {
        String classpath = System.getProperty("java.class.path");
        if (!Arrays.asList(classpath.split(File.pathSeparator)).contains(jars.library())) {
            throw new IllegalStateException("the library jar " + jars.library() + " is not on the class path " + classpath);
        }
        Path scratch = Files.createTempDirectory("variant-drains");
        List<Map<String, Object>> rows = new ArrayList<>();
        for (int round = 1; round <= rounds; round++) {
            for (V variant : order.apply(round)) {
                String cp = variant.onBaseline() ? classpath.replace(jars.library(), jars.baseline()) : classpath;
                Path result = scratch.resolve(variant.id() + "-" + round + ".json");
                System.out.printf(Locale.ROOT, "round %d, %s (load average %s)%n", round, variant.label(),
                        Machine.loadAverage());
                List<String> java = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
                java.addAll(CHILD_JVM_ARGS);
                java.addAll(List.of(
                        "-Dbench.database=" + System.getProperty("bench.database", "bench"),
                        "-cp", cp, main.getName(),
                        "--child", variant.id(), "--round", Integer.toString(round), "--result", result.toString()));
                java.addAll(settings.childArgs());
                Process process = new ProcessBuilder(java).inheritIO().start();
                if (process.waitFor() != 0) {
                    throw new IllegalStateException(variant.id() + " round " + round + " failed: exit " + process.exitValue());
                }
                rows.addAll(JSON.readValue(result.toFile(), new TypeReference<List<Map<String, Object>>>() {}));
            }
        }
        return rows;
    }

    /** The variant of {@code values} named {@code id} (a child's {@code --child}). */
    static <V extends Variant> V byId(List<V> values, String id) {
        return values.stream().filter(v -> v.id().equals(id)).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("no variant " + id + " among "
                        + values.stream().map(Variant::id).toList()));
    }

    /** The rows of one cell and variant. */
    static List<Map<String, Object>> rows(List<Map<String, Object>> rows, DrainCell cell, String variant) {
        return rows.stream().filter(r -> variant.equals(r.get("variant")) && number(r, "workers") == cell.workers()
                && number(r, "batch") == cell.batch()).toList();
    }

    /** The median of a column over rows. */
    static double median(List<Map<String, Object>> rows, String column) {
        return Percentiles.median(rows.stream().map(r -> number(r, column)).toList());
    }

    static double number(Map<String, Object> row, String column) {
        return ((Number) row.get(column)).doubleValue();
    }

    /** A CPU column's medians in one cell, one per variant in {@code variants}' order, "a / b / c". */
    static String cpuMedians(List<Map<String, Object>> rows, DrainCell cell, List<? extends Variant> variants, String column) {
        return String.join(" / ", variants.stream().map(v -> String.format(Locale.ROOT, "%.1f",
                median(rows(rows, cell, v.id()), column))).toList());
    }

    /**
     * Ends a report: appends the machine's table to {@code md}, writes {@code results} as
     * results.json, the rows as {@code csvName} and {@code md} as README.md into {@code out}, and
     * prints the README.
     */
    static void writeReport(Path out, StringBuilder md, Map<String, Object> machine, Map<String, Object> results,
            List<Map<String, Object>> rows, String csvName) throws IOException {
        md.append("\n## Machine\n\n| | |\n|---|---|\n");
        machine.forEach((k, v) -> md.append("| ").append(k).append(" | ").append(v).append(" |\n"));
        Files.createDirectories(out);
        REPORT_JSON.writeValue(out.resolve("results.json").toFile(), results);
        Report.csv(out.resolve(csvName), rows);
        Files.writeString(out.resolve("README.md"), md);
        System.out.println();
        System.out.println(md);
        System.out.println("Results in " + out);
    }
}
