package io.workqueue.examples.bench;

import io.r2dbc.pool.ConnectionPool;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.migrations.WorkQueueMigrations;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Scenario 4, claim cost versus history: the latency of {@code claim(100)} on a table holding the
 * same backlog of ready rows (10,000) beside 10,000 or 1,000,000 completed-but-unreaped rows.
 *
 * <p>Each history size has its own table (prefix), preloaded by SQL and VACUUM ANALYZEd. Claims
 * alternate between the two tables, so machine noise falls on both alike; after each timed claim
 * the items are released (untimed) so the ready backlog stays the same. The median of the timed
 * claims is compared. EXPLAIN (ANALYZE, BUFFERS) of the claim statement on both tables (rolled
 * back) is kept as evidence.
 */
final class ClaimHistory {
    static final String QUEUE = "hist";
    static final int BATCH = 100;

    /** {@code vacuumed}: whether VACUUM ran after the rows were completed (else their dead index entries remain). */
    record Side(String prefix, int completedRows, int readyRows, boolean vacuumed, List<Double> latenciesMillis, String plan) {
        double median() {
            return Percentiles.median(latenciesMillis);
        }
    }

    record Result(Side small, Side large, Side unvacuumed) {
        double ratio() {
            return large.median() / small.median();
        }

        double unvacuumedRatio() {
            return unvacuumed.median() / small.median();
        }
    }

    private final Db db;

    ClaimHistory(Db db) {
        this.db = db;
    }

    Result run(int smallHistory, int largeHistory, int ready, int claims) {
        String smallPrefix = "bench_hist_small";
        String largePrefix = "bench_hist_large";
        String unvacuumedPrefix = "bench_hist_unvac";
        preload(smallPrefix, smallHistory, ready);
        preload(largePrefix, largeHistory, ready);
        preloadUnvacuumed(unvacuumedPrefix, largeHistory, ready);
        String app = "bench-history";
        ConnectionPool pool = db.pool(app, 2);
        List<ReactiveWorkQueue<String>> queues = List.of(queue(pool, smallPrefix), queue(pool, largePrefix),
                queue(pool, unvacuumedPrefix));
        List<List<Double>> latencies = List.of(new ArrayList<>(), new ArrayList<>(), new ArrayList<>());
        int warmup = 20;
        for (int i = 0; i < warmup + claims; i++) {
            // Rotate which table goes first, too.
            for (int k = 0; k < queues.size(); k++) {
                int side = (i + k) % queues.size();
                double millis = timedClaim(queues.get(side));
                if (i >= warmup) {
                    latencies.get(side).add(millis);
                }
            }
        }
        db.dispose(pool, app);
        Result result = new Result(
                new Side(smallPrefix, smallHistory, ready, true, latencies.get(0), explain(smallPrefix)),
                new Side(largePrefix, largeHistory, ready, true, latencies.get(1), explain(largePrefix)),
                new Side(unvacuumedPrefix, largeHistory, ready, false, latencies.get(2), explain(unvacuumedPrefix)));
        db.exec("ALTER TABLE " + WorkQueueMigrations.tableName(unvacuumedPrefix) + " RESET (autovacuum_enabled)");
        System.out.printf(Locale.ROOT, "  claim(%d) with %,d completed rows: median %.2f ms; with %,d: median %.2f ms (ratio %.2f);"
                        + " with %,d completed and not yet vacuumed: median %.2f ms (ratio %.2f)%n",
                BATCH, smallHistory, result.small().median(), largeHistory, result.large().median(), result.ratio(),
                largeHistory, result.unvacuumed().median(), result.unvacuumedRatio());
        return result;
    }

    private static ReactiveWorkQueue<String> queue(ConnectionPool pool, String prefix) {
        return ReactiveWorkQueue.builder(pool, String.class)
                .config(WorkQueueConfig.builder(QUEUE).tablePrefix(prefix).build())
                .build();
    }

    /** Times one claim, then releases what it leased (untimed), so the ready backlog stays the same. */
    private static double timedClaim(ReactiveWorkQueue<String> queue) {
        long start = System.nanoTime();
        List<Item<String>> items = queue.claim(BATCH, Duration.ofMinutes(5)).block();
        double millis = (System.nanoTime() - start) / 1e6;
        if (items == null || items.size() != BATCH) {
            throw new IllegalStateException("claim came back short: " + (items == null ? 0 : items.size()));
        }
        queue.release(Duration.ZERO, null, items.stream().map(Item::key).toList()).block();
        return millis;
    }

    private void preload(String prefix, int completed, int ready) {
        db.migrate(prefix);
        String table = WorkQueueMigrations.tableName(prefix);
        db.exec("TRUNCATE " + table,
                // History: completed within the last hour, well inside the 24 h retention (unreaped).
                "INSERT INTO " + table + " (queue_name, item_key, attempts, enqueued_at, available_at, completed_at)"
                        + " SELECT '" + QUEUE + "', 'c' || lpad(g::text, 8, '0'), 1, now() - interval '1 hour',"
                        + " now() - interval '1 hour', now() - interval '1 hour' + g * interval '1 millisecond'"
                        + " FROM generate_series(1, " + completed + ") g",
                "INSERT INTO " + table + " (queue_name, item_key) SELECT '" + QUEUE + "', 'r' || lpad(g::text, 8, '0')"
                        + " FROM generate_series(1, " + ready + ") g",
                "VACUUM ANALYZE " + table);
    }

    /**
     * The same history, but made the way a drain makes it: {@code completed} rows inserted ready,
     * VACUUM ANALYZEd, then completed by one UPDATE with autovacuum off for the table, so the claim
     * index still holds their dead entries (the state between a burst of completions and the next
     * vacuum).
     */
    private void preloadUnvacuumed(String prefix, int completed, int ready) {
        db.migrate(prefix);
        String table = WorkQueueMigrations.tableName(prefix);
        db.exec("TRUNCATE " + table,
                "ALTER TABLE " + table + " SET (autovacuum_enabled = false)",
                "INSERT INTO " + table + " (queue_name, item_key, enqueued_at, available_at)"
                        + " SELECT '" + QUEUE + "', 'c' || lpad(g::text, 8, '0'), now() - interval '2 hours', now() - interval '2 hours'"
                        + " FROM generate_series(1, " + completed + ") g",
                "INSERT INTO " + table + " (queue_name, item_key) SELECT '" + QUEUE + "', 'r' || lpad(g::text, 8, '0')"
                        + " FROM generate_series(1, " + ready + ") g",
                "VACUUM ANALYZE " + table,
                "UPDATE " + table + " SET attempts = 1, completed_at = now() - interval '1 hour' WHERE item_key LIKE 'c%'",
                "ANALYZE " + table);
    }

    /** EXPLAIN (ANALYZE, BUFFERS) of the library's claim on {@code prefix}'s table, rolled back. */
    private String explain(String prefix) {
        String claim = LibrarySql.forPrefix(prefix).claimDue
                .replace("$1::text", "'" + QUEUE + "'::text")
                .replace("$2::int", "0::int")
                .replace("$3::int", BATCH + "::int")
                .replace("$4::bigint", "300000000::bigint")
                .replace("$5::boolean", "false::boolean");
        List<String> lines = new ArrayList<>();
        db.query("BEGIN; EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + claim + "; ROLLBACK", row -> {
            lines.add(String.valueOf(row.get(0)));
            return 0;
        });
        return String.join("\n", lines);
    }
}
