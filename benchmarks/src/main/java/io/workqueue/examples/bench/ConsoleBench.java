package io.workqueue.examples.bench;

import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.spi.Connection;
import io.r2dbc.spi.Statement;
import io.workqueue.ItemPage;
import io.workqueue.ItemState;
import io.workqueue.WorkQueueAdmin;
import io.workqueue.WorkQueueConfig;
import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * What the console's reads and actions cost with a million items in one queue: every
 * {@link WorkQueueAdmin} call a console view makes, timed from the client (statement, round trip and
 * decoding; the JSON the console adds is small beside it), and each statement's plan with buffers
 * ({@code EXPLAIN (ANALYZE, BUFFERS)}, writes rolled back). Results go to
 * {@code docs/benchmarks/console/README.md}.
 *
 * <pre>
 * benchmarks/console.sh                       # 1,000,000 pending items + 200,000 completed, 30 samples
 * benchmarks/console.sh --items 200000 --samples 10
 * </pre>
 *
 * <p>The queue holds {@code --items} pending items (a tenth at priority 5, the rest at 0), of which
 * 1 in 1,000 are stalled, leased and delayed each; the stalled ones were released recently, so
 * they sit at the tail of claim order, the worst place for a listing in claim order to find them.
 * Beside them, 200,000 completed items (completed 100 per statement, as batched completes leave
 * them) and another queue of 100,000. Loaded with SQL, then VACUUM ANALYZE (the machine's main
 * server runs without autovacuum).
 */
final class ConsoleBench {
    private static final String PREFIX = "console_bench";
    private static final String QUEUE = "million";
    private static final int MAX_ATTEMPTS = 5;
    private static final int PAGE = 50;

    private final Db db = Db.fromEnvironment("bench");
    private final int items;
    private final int samples;
    private final Path out;
    private final Path repo;
    private final List<String[]> rows = new ArrayList<>();
    private final StringBuilder plans = new StringBuilder();

    private ConsoleBench(int items, int samples, Path out, Path repo) {
        this.items = items;
        this.samples = samples;
        this.out = out;
        this.repo = repo;
    }

    public static void main(String[] args) throws Exception {
        int items = 1_000_000;
        int samples = 30;
        Path repo = Path.of(System.getProperty("bench.repo", "."));
        Path out = repo.resolve("docs/benchmarks/console");
        boolean load = true;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--items" -> items = Integer.parseInt(args[++i]);
                case "--samples" -> samples = Integer.parseInt(args[++i]);
                case "--out" -> out = Path.of(args[++i]);
                case "--no-load" -> load = false;
                default -> throw new IllegalArgumentException("unknown argument " + args[i]
                        + " (--items N, --samples N, --out DIR, --no-load)");
            }
        }
        new ConsoleBench(items, samples, out, repo).run(load);
        System.exit(0);
    }

    private void run(boolean load) throws IOException {
        Map<String, Object> machine = Machine.describe(db, repo);
        if (load) {
            load();
        }
        ConnectionPool pool = db.pool("console-bench", 4);
        WorkQueueAdmin admin = WorkQueueAdmin.builder(pool).tablePrefix(PREFIX)
                .queue(WorkQueueConfig.builder(QUEUE).tablePrefix(PREFIX).maxAttempts(MAX_ATTEMPTS).build())
                .queue(WorkQueueConfig.builder("other").tablePrefix(PREFIX).maxAttempts(MAX_ATTEMPTS).build())
                .build();
        String table = PREFIX + "_work_queue_items";
        System.out.printf("table %s: %d rows%n", table, db.queryLong("SELECT count(*) FROM " + table));

        // What each console view asks for.
        time("queue list: names and every queue's stats (admin.queues(); the console caches it)", () -> admin.queues().collectList());
        time("stats of the million-item queue (its stats() read)", () -> admin.stats(QUEUE));
        for (ItemState state : ItemState.values()) {
            time("first page of " + name(state) + " (" + PAGE + " items)", () -> admin.items(QUEUE, state, null, PAGE));
        }
        String deepReady = cursorAfter(admin, ItemState.READY, 2_000);
        time("ready, page 2,001 (after 100,000 items, from its cursor)", () -> admin.items(QUEUE, ItemState.READY, deepReady, PAGE));
        String deepCompleted = cursorAfter(admin, ItemState.COMPLETED, 2_000);
        time("completed, page 2,001 (after 100,000 items, from its cursor)",
                () -> admin.items(QUEUE, ItemState.COMPLETED, deepCompleted, PAGE));
        walk(admin, ItemState.STALLED);
        walk(admin, ItemState.LEASED);
        String stalledKey = firstKey(admin, ItemState.STALLED);
        time("one item's detail", () -> admin.item(QUEUE, stalledKey));

        // Actions, each undone by SQL after it is timed, so every sample does the same work.
        String restore = "UPDATE " + table + " SET attempts = " + MAX_ATTEMPTS
                + ", available_at = now() - INTERVAL '1 minute' WHERE queue_name = '" + QUEUE + "' AND item_key = '" + stalledKey + "'";
        time("retry one stalled item", () -> admin.retry(QUEUE, List.of(stalledKey)).doOnNext(changed -> {
            if (changed.size() != 1) {
                throw new IllegalStateException("the retry changed " + changed);
            }
        }), () -> db.exec(restore));
        String reinsert = "INSERT INTO " + table + " (queue_name, item_key, attempts) VALUES ('" + QUEUE + "', '" + stalledKey
                + "', " + MAX_ATTEMPTS + ")";
        time("remove one item", () -> admin.remove(QUEUE, List.of(stalledKey)), () -> db.exec(reinsert));
        time("purge 1,000 completed items (oldest first)", () -> admin.purgeCompleted(QUEUE, 1_000), () -> { });

        explainAll(pool, stalledKey);
        db.dispose(pool, "console-bench");
        write(machine);
    }

    private static String name(ItemState state) {
        return state.name().toLowerCase(Locale.ROOT);
    }

    private void load() {
        String table = PREFIX + "_work_queue_items";
        db.exec("DROP TABLE IF EXISTS " + table);
        db.migrate(PREFIX);
        long start = System.nanoTime();
        db.exec("INSERT INTO " + table + " (queue_name, item_key, priority, attempts, enqueued_at, available_at, lease_until, last_error)"
                + " SELECT '" + QUEUE + "', 'item-' || lpad(i::text, 8, '0'),"
                + "   CASE WHEN i % 10 = 0 THEN 5 ELSE 0 END,"
                + "   CASE WHEN i % 1000 = 7 THEN " + MAX_ATTEMPTS + " WHEN i % 1000 = 1 THEN 1 ELSE 0 END,"
                + "   now() - INTERVAL '3 hours' + i * INTERVAL '10 milliseconds',"
                + "   CASE WHEN i % 1000 = 7 THEN now() - INTERVAL '1 minute' + (i % 997) * INTERVAL '1 millisecond'"
                + "        WHEN i % 1000 = 2 THEN now() + INTERVAL '1 hour'"
                + "        ELSE now() - INTERVAL '3 hours' + i * INTERVAL '10 milliseconds' END,"
                + "   CASE WHEN i % 1000 = 1 THEN now() + INTERVAL '1 hour' ELSE 'epoch' END,"
                + "   CASE WHEN i % 1000 = 7 THEN 'renderer ran out of memory on item ' || i END"
                + " FROM generate_series(1, " + items + ") AS i",
                "INSERT INTO " + table + " (queue_name, item_key, attempts, enqueued_at, available_at, completed_at)"
                + " SELECT '" + QUEUE + "', 'done-' || lpad(i::text, 8, '0'), 1, now() - INTERVAL '5 hours',"
                + "   now() - INTERVAL '5 hours', now() - INTERVAL '4 hours' + (i / 100) * INTERVAL '10 milliseconds'"
                + " FROM generate_series(1, 200000) AS i",
                "INSERT INTO " + table + " (queue_name, item_key) SELECT 'other', 'o-' || i FROM generate_series(1, 100000) AS i",
                "VACUUM ANALYZE " + table);
        System.out.printf("loaded in %.1f s%n", (System.nanoTime() - start) / 1e9);
    }

    /** The cursor after {@code pages} pages of {@code state}. */
    private static String cursorAfter(WorkQueueAdmin admin, ItemState state, int pages) {
        String after = null;
        for (int i = 0; i < pages; i++) {
            after = admin.items(QUEUE, state, after, PAGE).block().next();
        }
        return after;
    }

    /** The first item of {@code state}, following the cursor past pages the scan budget left empty. */
    private static String firstKey(WorkQueueAdmin admin, ItemState state) {
        String after = null;
        do {
            ItemPage page = admin.items(QUEUE, state, after, 1).block();
            if (!page.items().isEmpty()) {
                return page.items().get(0).storedKey();
            }
            after = page.next();
        } while (after != null);
        throw new IllegalStateException("no " + state + " item");
    }

    /** Reads every page of a sparse state, timing each: how long a person paging through it waits per page. */
    private void walk(WorkQueueAdmin admin, ItemState state) {
        List<Double> millis = new ArrayList<>();
        int found = 0;
        for (int round = 0; round < 2; round++) { // the first round warms the cache, the second is kept
            millis.clear();
            found = 0;
            String after = null;
            do {
                long start = System.nanoTime();
                ItemPage page = admin.items(QUEUE, state, after, PAGE).block();
                millis.add((System.nanoTime() - start) / 1e6);
                found += page.items().size();
                after = page.next();
            } while (after != null);
        }
        record("every page of " + name(state) + ", in turn (" + millis.size() + " pages, " + found + " items)", millis);
    }

    private void time(String what, Supplier<Mono<?>> call) {
        time(what, call, () -> { });
    }

    private void time(String what, Supplier<Mono<?>> call, Runnable undo) {
        for (int i = 0; i < 3; i++) {
            call.get().block();
            undo.run();
        }
        List<Double> millis = new ArrayList<>();
        for (int i = 0; i < samples; i++) {
            long start = System.nanoTime();
            call.get().block();
            millis.add((System.nanoTime() - start) / 1e6);
            undo.run();
        }
        record(what, millis);
    }

    private void record(String what, List<Double> millis) {
        String[] row = {what, String.valueOf(millis.size()), format(Percentiles.median(millis)),
                format(Percentiles.of(millis, 95)), format(millis.stream().mapToDouble(Double::doubleValue).max().orElse(0))};
        rows.add(row);
        System.out.printf("%-90s n=%s p50 %s ms  p95 %s ms  max %s ms%n", (Object[]) row);
    }

    private static String format(double millis) {
        return String.format(Locale.ROOT, "%.1f", millis);
    }

    // ---------------------------------------------------------------- plans

    /** EXPLAIN (ANALYZE, BUFFERS) of each of the admin's statements, as the library renders it; writes are rolled back. */
    private void explainAll(ConnectionPool pool, String stalledKey) {
        Map<String, String> sql = inspectionSql();
        Object[] firstPage = {QUEUE, MAX_ATTEMPTS, new Null(Integer.class), new Null(Long.class), new Null(String.class),
                (long) Integer.MAX_VALUE, PAGE, WorkQueueAdmin.SCAN_BUDGET};
        Map<String, Object[]> cases = new LinkedHashMap<>();
        cases.put("stats", new Object[] {QUEUE, MAX_ATTEMPTS});
        cases.put("queueNames", new Object[] {});
        cases.put("readyPage", firstPage);
        cases.put("stalledPage", firstPage);
        cases.put("leasedPage", firstPage);
        cases.put("delayedPage", firstPage);
        cases.put("completedPage", new Object[] {QUEUE, MAX_ATTEMPTS, new Null(Long.class), new Null(String.class), PAGE,
                WorkQueueAdmin.SCAN_BUDGET});
        cases.put("item", new Object[] {QUEUE, MAX_ATTEMPTS, stalledKey});
        cases.put("retryKeys", new Object[] {QUEUE, MAX_ATTEMPTS, new String[] {stalledKey}});
        cases.put("removeKeys", new Object[] {QUEUE, new String[] {stalledKey}});
        cases.put("purgeCompleted", new Object[] {QUEUE, 1_000});
        cases.forEach((field, binds) -> {
            plans.append("## ").append(field).append("\n\n```\n");
            explain(pool, sql.get(field), binds).forEach(line -> plans.append(line).append('\n'));
            plans.append("```\n\n");
        });
    }

    /** A parameter bound as SQL NULL of a type. */
    private record Null(Class<?> type) {}

    private static List<String> explain(ConnectionPool pool, String statement, Object[] binds) {
        return Mono.usingWhen(pool.create(), (Connection c) -> Mono.from(c.beginTransaction())
                        .thenMany(Flux.defer(() -> {
                            Statement explain = c.createStatement("EXPLAIN (ANALYZE, BUFFERS) " + statement);
                            for (int i = 0; i < binds.length; i++) {
                                if (binds[i] instanceof Null n) {
                                    explain.bindNull(i, n.type());
                                } else {
                                    explain.bind(i, binds[i]);
                                }
                            }
                            return Flux.from(explain.execute()).concatMap(r -> r.map((row, meta) -> row.get(0, String.class)));
                        }))
                        .collectList()
                        .flatMap(lines -> Mono.from(c.rollbackTransaction()).thenReturn(lines)),
                Connection::close)
                .block(Duration.ofMinutes(1));
    }

    /** The admin's statements for this table, read from the library's package-private class, as rendered. */
    private static Map<String, String> inspectionSql() {
        try {
            Class<?> type = Class.forName("io.workqueue.postgres.Sql$Inspection");
            Constructor<?> constructor = type.getDeclaredConstructor(String.class);
            constructor.setAccessible(true);
            Object sql = constructor.newInstance(PREFIX);
            Map<String, String> statements = new LinkedHashMap<>();
            for (Field field : type.getDeclaredFields()) {
                if (field.getType() == String.class && !java.lang.reflect.Modifier.isStatic(field.getModifiers())) {
                    field.setAccessible(true);
                    statements.put(field.getName(), (String) field.get(sql));
                }
            }
            return statements;
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot read the admin's statements (io.workqueue.postgres.Sql$Inspection)", e);
        }
    }

    // ---------------------------------------------------------------- report

    private void write(Map<String, Object> machine) throws IOException {
        Files.createDirectories(out);
        StringBuilder md = new StringBuilder();
        md.append("# The console at ").append(String.format(Locale.ROOT, "%,d", items)).append(" items\n\n");
        md.append("Measured by `benchmarks/console.sh")
                .append(items == 1_000_000 ? "" : " --items " + items)
                .append(samples == 30 ? "" : " --samples " + samples)
                .append("` (`ConsoleBench`): every `WorkQueueAdmin` call a console view makes, timed from the client")
                .append(" (statement, round trip, decoding; warm cache, after 3 unmeasured calls).\n\n");
        md.append("The queue `").append(QUEUE).append("` holds ").append(String.format(Locale.ROOT, "%,d", items))
                .append(" pending items (1 in 10 at priority 5; 1 in 1,000 each stalled, leased and delayed, the stalled ones")
                .append(" at the tail of claim order) and 200,000 completed ones (100 per completion instant); queue `other`")
                .append(" 100,000 more. Attempt limit 5. Page size ").append(PAGE).append(", scan budget ")
                .append(String.format(Locale.ROOT, "%,d", WorkQueueAdmin.SCAN_BUDGET)).append(" index entries per part.\n\n");
        md.append("| what | samples | p50 ms | p95 ms | max ms |\n|---|---|---|---|---|\n");
        for (String[] row : rows) {
            md.append("| ").append(String.join(" | ", row)).append(" |\n");
        }
        md.append("\nMachine:\n\n");
        machine.forEach((key, value) -> md.append("- ").append(key).append(": `").append(value).append("`\n"));
        md.append("\nPlans: [`plans.md`](plans.md).\n");
        Files.writeString(out.resolve("README.md"), md.toString());
        Files.writeString(out.resolve("plans.md"), "# Plans of the admin's statements at "
                + String.format(Locale.ROOT, "%,d", items) + " items\n\n`EXPLAIN (ANALYZE, BUFFERS)` of each statement as the"
                + " library renders it, on the benchmark's table (the pages: first pages); the writes ran in a transaction that was rolled back.\n\n"
                + plans);
        System.out.println("wrote " + out.resolve("README.md") + " and plans.md");
    }
}
