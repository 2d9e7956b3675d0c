package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.workqueue.Stats;
import io.workqueue.testing.Queues;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * What {@code stats()} and the health check cost is set by the backlog, not by the history: the
 * same backlog over 20 times the completed rows touches the same buffers (a count of what the
 * server read, not a timing). The exact count they replaced is measured beside them, and grows
 * with the history: the failure this prevents, where a day of retention made every health probe
 * of every instance a scan of millions of rows.
 */
class StatsCostIT {
    private static final String QUEUE = "costly";
    private static final int PENDING = 3_000;
    private static final int SMALL_HISTORY = 20_000;
    private static final int LARGE_HISTORY = 400_000;
    /** Microseconds: an hour, which no pending row here has been ready for. */
    private static final long HOUR_US = 3_600_000_000L;
    /** Items completed at the head of each band of the churned queue. */
    private static final int CHURNED_PER_BAND = 10_000;

    /** The read {@code stats()} ran before: every row of the queue, history included. */
    private static final String EXACT_COUNTS = """
            SELECT count(*) FILTER (WHERE completed_at IS NULL) AS pending,
                count(*) FILTER (WHERE completed_at IS NOT NULL) AS completed
            FROM %s WHERE queue_name = $1""";

    private static Sql small;
    private static Sql large;
    private static String largePrefix;

    @BeforeAll
    static void buildTables() {
        small = new Sql(table(SMALL_HISTORY), false);
        largePrefix = table(LARGE_HISTORY);
        large = new Sql(largePrefix, false);
    }

    /**
     * A table whose queue has {@link #PENDING} items in three bands, a tenth leased, over a history;
     * the items lie on the heap out of the due index's order, as a live table's do (enqueued by many
     * writers, retried, re-leased), so reading them in index order costs a buffer per row.
     */
    private static String table(int completed) {
        String prefix = TestDatabase.createTable();
        String table = Queues.table(prefix);
        TestDatabase.execute(
                "INSERT INTO " + table + " (queue_name, item_key, enqueued_at, available_at, completed_at)"
                        + " SELECT '" + QUEUE + "', 'done-' || g, now() - INTERVAL '1 day', now() - INTERVAL '1 day',"
                        + " now() - g * INTERVAL '1 millisecond' FROM generate_series(1, " + completed + ") AS g",
                "INSERT INTO " + table + " (queue_name, item_key, priority, available_at, lease_until)"
                        + " SELECT '" + QUEUE + "', 'item-' || g, g % 3,"
                        + " now() - (g * 1237 % " + PENDING + ") * INTERVAL '10 milliseconds',"
                        + " CASE WHEN g % 10 = 0 THEN now() + INTERVAL '1 hour' ELSE 'epoch' END"
                        + " FROM generate_series(1, " + PENDING + ") AS g",
                "ANALYZE " + table);
        return prefix;
    }

    /** The heap pages the queue's pending rows lie on. */
    private static long backlogPages(Sql sql) {
        return TestDatabase.queryLong("SELECT count(DISTINCT (ctid::text::point)[0]) FROM " + sql.table
                + " WHERE queue_name = $1 AND completed_at IS NULL", QUEUE);
    }

    @Test
    void theStatsReadTouchesWhatTheBacklogHoldsWhateverTheHistory() {
        long smallCost = Plans.statsReadBuffers(small, QUEUE, 0, false);
        long largeCost = Plans.statsReadBuffers(large, QUEUE, 0, false);
        long exactSmall = Plans.buffersTouched(EXACT_COUNTS.formatted(small.table), QUEUE);
        long exactLarge = Plans.buffersTouched(EXACT_COUNTS.formatted(large.table), QUEUE);
        System.out.printf("stats() buffers: %d with %,d completed, %d with %,d; the exact count: %d and %d%n",
                smallCost, SMALL_HISTORY, largeCost, LARGE_HISTORY, exactSmall, exactLarge);

        // Whether the planner reads the backlog through a bitmap or in index order can differ
        // between the two tables (a hundred buffers here); the history's growth is 20 times that.
        assertTrue(largeCost - smallCost < (exactLarge - exactSmall) / 20,
                "20x the history must not cost more: " + smallCost + " then " + largeCost
                        + " buffers, while the history alone grew by " + (exactLarge - exactSmall));
        assertTrue(exactLarge > 5 * exactSmall,
                "the exact count grows with the history (" + exactSmall + " then " + exactLarge
                        + " buffers), which is why stats() stopped making it");
        assertTrue(largeCost * 4 < exactLarge, "and stats() reads far less than it: " + largeCost + " vs " + exactLarge);
    }

    @Test
    void theHealthCheckTouchesAFewPagesWhateverTheHistoryOrBacklog() {
        // Nothing late: the check walks every band's old entries and finds none.
        long quietSmall = Plans.buffersTouched(small.readyLongerThan, QUEUE, 0, HOUR_US);
        long quietLarge = Plans.buffersTouched(large.readyLongerThan, QUEUE, 0, HOUR_US);
        // Something late at once: the first band's first due entry answers.
        long lateLarge = Plans.buffersTouched(large.readyLongerThan, QUEUE, 0, 0L);
        long backlogPages = backlogPages(large);
        System.out.printf("health check buffers: %d and %d when nothing is late, %d when something is;"
                + " the backlog's heap pages %d%n", quietSmall, quietLarge, lateLarge, backlogPages);

        assertTrue(quietLarge <= quietSmall + 4, "history must not matter: " + quietSmall + " then " + quietLarge);
        assertTrue(quietLarge <= 40 && lateLarge <= 40,
                "a few index pages per band, not the backlog: " + quietLarge + ", " + lateLarge);
        // The stats read visits each of the backlog's pages once; the check reads none of them.
        assertTrue(quietLarge < backlogPages, "fewer than the backlog's heap pages alone: " + quietLarge + " vs "
                + backlogPages);
    }

    /**
     * The bands as the health check found them before: head first, each band entered at its
     * head. Kept to show what the check now avoids.
     */
    private static final String BANDS_FROM_THEIR_HEADS = """
            WITH RECURSIVE bands AS (
                (SELECT priority FROM %1$s WHERE queue_name = $1 AND completed_at IS NULL
                 ORDER BY priority DESC LIMIT 1)
                UNION ALL
                SELECT (SELECT q.priority FROM %1$s AS q
                        WHERE q.queue_name = $1 AND q.completed_at IS NULL AND q.priority < bands.priority
                        ORDER BY q.priority DESC LIMIT 1)
                FROM bands WHERE bands.priority IS NOT NULL)
            SELECT count(*) FROM bands""";

    /**
     * Claims take from a band's head and completions leave dead entries there, which stay in the
     * due index until VACUUM cleans it, and VACUUM skips that while they lie on under 2 % of the
     * table's pages, as they do beside a long history (the stats-history benchmark's 20M-row table:
     * 977 buffers where 125 had done at 1M). The check finds each band at its tail, where enqueues
     * add live entries, and so reads as little over a churned head as over a clean one; entered at
     * their heads, the bands cost a walk across every dead entry.
     */
    @Test
    void theHealthCheckFindsEachBandPastTheDeadEntriesAtItsHead() {
        Sql clean = new Sql(churnedTable(0), false);
        Sql churned = new Sql(churnedTable(CHURNED_PER_BAND), false);
        long cleanCost = Plans.buffersTouched(clean.readyLongerThan, QUEUE, 0, HOUR_US);
        long churnedCost = Plans.buffersTouched(churned.readyLongerThan, QUEUE, 0, HOUR_US);
        long fromHeads = Plans.buffersTouched(BANDS_FROM_THEIR_HEADS.formatted(churned.table), QUEUE);
        System.out.printf("health check buffers: %d over clean band heads, %d over %,d dead entries at each;"
                + " the bands found from their heads: %d%n", cleanCost, churnedCost, CHURNED_PER_BAND, fromHeads);

        assertTrue(churnedCost <= cleanCost + 4, "dead entries at the heads must not matter: " + cleanCost + " then "
                + churnedCost);
        assertTrue(fromHeads > 8 * churnedCost, "entered at their heads, the bands cost a walk across the dead"
                + " entries (" + fromHeads + " buffers), which is what the check avoids (" + churnedCost + ")");
    }

    /**
     * A queue of three bands of {@code CHURNED_PER_BAND + 1,000} pending items each, available over
     * the last 50 minutes, whose oldest {@code churned} per band have since completed; no VACUUM
     * reaches it, as none cleans the index beside a long history.
     */
    private static String churnedTable(int churned) {
        String prefix = TestDatabase.createTable();
        String table = Queues.table(prefix);
        int perBand = CHURNED_PER_BAND + 1_000;
        TestDatabase.execute(
                "ALTER TABLE " + table + " SET (autovacuum_enabled = false)",
                "INSERT INTO " + table + " (queue_name, item_key, priority, available_at)"
                        + " SELECT '" + QUEUE + "', 'item-' || b || '-' || g, b,"
                        + " now() - INTERVAL '50 minutes' + g * INTERVAL '100 milliseconds'"
                        + " FROM generate_series(1, 3) AS b, generate_series(1, " + perBand + ") AS g",
                "UPDATE " + table + " SET completed_at = now()"
                        + " WHERE split_part(item_key, '-', 3)::int <= " + churned,
                "ANALYZE " + table);
        return prefix;
    }

    /**
     * The backlog read one row at a time, in the due index's order, costs a buffer per row; the
     * stats read visits each of its pages once (a bitmap of the due index). On the 20M-row
     * benchmark table the planner chose the first by itself: 101,938 buffers for 100,000 rows on
     * 3,095 pages.
     */
    @Test
    void theStatsReadVisitsEachPageOfTheBacklogOnceNotEachRow() {
        long read = Plans.statsReadBuffers(large, QUEUE, 0, false);
        long inIndexOrder = Plans.statsReadBuffers(large, QUEUE, 0, true);
        long pages = backlogPages(large);
        System.out.printf("stats read buffers: %d for %d pending rows on %d pages; %d in index order%n",
                read, PENDING, pages, inIndexOrder);

        assertTrue(inIndexOrder > PENDING * 3 / 4, "in index order, about a buffer per row: " + inIndexOrder);
        assertTrue(read * 10 < inIndexOrder, "each page once, not each row: " + read + " buffers for " + pages
                + " pages, against " + inIndexOrder);
    }

    @Test
    void bothStillAnswerRightOverTheLargeHistory() {
        Stats stats = Queues.over(TestDatabase.pool(), largePrefix, QUEUE, c -> c).stats().block(Duration.ofSeconds(30));
        assertEquals(PENDING, stats.pending());
        assertEquals(PENDING / 10, stats.leased());
        assertEquals(Stats.COMPLETED_COUNT_LIMIT, stats.completed());
        assertTrue(stats.completedCapped());
    }
}
