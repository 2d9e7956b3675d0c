package io.workqueue.postgres;

import static io.workqueue.postgres.Plans.analyzedCustomPlan;
import static io.workqueue.postgres.Plans.analyzedGenericPlan;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.workqueue.testing.TestDatabase;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A claim's cost is linear in its batch whatever the planner knows about the table. The claim's
 * last step pairs each leased row with its row in {@code due} (its lease before the claim); done
 * as a join of the two, it was planned from estimates, and on a table with statistics (autovacuum
 * analyzes every table) holding many queues' completed rows it became a nested loop comparing
 * every leased row with every due row: a claim of 2,000 took 479 ms instead of 24. Counted here
 * as the comparisons a join filter made ({@code EXPLAIN ANALYZE}'s "Rows Removed by Join Filter"),
 * which do not depend on the machine.
 */
class ClaimPlanIT {
    private static final int BATCH = 2_000;
    private static final int UNSEEN_HISTORY = 20_000;
    private static Sql sql;

    @BeforeAll
    static void analyzedTableOfManyQueues() {
        String prefix = TestDatabase.createTable();
        sql = new Sql(prefix, false);
        TestDatabase.execute(
                "INSERT INTO " + sql.table + " (queue_name, item_key, completed_at)"
                        + " SELECT 'done-' || (g % 16), 'c' || g, now() FROM generate_series(1, 80000) AS g",
                "INSERT INTO " + sql.table + " (queue_name, item_key, available_at)"
                        + " SELECT 'probe', 'p' || g, now() - interval '1 minute' FROM generate_series(1, " + BATCH + ") AS g",
                "ANALYZE " + sql.table,
                // A queue the statistics have not seen: its history and backlog came after ANALYZE.
                "INSERT INTO " + sql.table + " (queue_name, item_key, completed_at)"
                        + " SELECT 'unseen', 'c' || g, now() FROM generate_series(1, " + UNSEEN_HISTORY + ") AS g",
                "INSERT INTO " + sql.table + " (queue_name, item_key, available_at)"
                        + " SELECT 'unseen', 'p' || g, now() - interval '1 minute' FROM generate_series(1, 100) AS g");
    }

    @Test
    void aClaimFromTheHeadComparesNoRowWithEveryOther() {
        assertLinear(analyzedGenericPlan(sql.claimDue, "text, int, int, bigint, boolean", "'probe', 0, " + BATCH + ", 30000000, true"));
    }

    @Test
    void aClaimFromCursorsComparesNoRowWithEveryOther() {
        assertLinear(analyzedGenericPlan(sql.claimFromCursors, "text, int, int, bigint, int[], bigint[], text[], boolean",
                "'probe', 0, " + BATCH + ", 30000000, ARRAY[0], ARRAY[0::bigint], ARRAY['']::text[], true"));
    }

    /**
     * Claims and completions settle on one generic plan instead of being planned afresh on every
     * run. With a claim's limit, bands and keys visible to the planner, on a table like the fleet
     * benchmark's (one queue's long history, another's backlog) the server never judged the
     * generic plan cheap enough and planned every run: 0.42-0.55 ms each, most of a small claim's
     * cost (docs/benchmarks/fleet/ANALYSIS.md). It plans the first five runs for their values and
     * keeps the generic plan from the sixth if it looks no dearer.
     */
    @Test
    void claimsSettleOnAGenericPlan() {
        String prefix = TestDatabase.createTable();
        Sql fleetLike = new Sql(prefix, false);
        TestDatabase.execute(
                "INSERT INTO " + fleetLike.table + " (queue_name, item_key, completed_at)"
                        + " SELECT 'history', 'c' || g, now() FROM generate_series(1, 200000) AS g",
                "INSERT INTO " + fleetLike.table + " (queue_name, item_key)"
                        + " SELECT 'probe', 'p' || g FROM generate_series(1, 50000) AS g",
                "VACUUM ANALYZE " + fleetLike.table);
        int runs = 10;
        List<Long> generic = List.of(
                Plans.genericRuns(fleetLike.claimDue, "text, int, int, bigint, boolean",
                        "'probe', 0, 100, 30000000, false", runs),
                Plans.genericRuns(fleetLike.claimFromCursors, "text, int, int, bigint, int[], bigint[], text[], boolean",
                        "'probe', 0, 100, 30000000, ARRAY[0], ARRAY[0::bigint], ARRAY['']::text[], false", runs),
                Plans.genericRuns(fleetLike.completeAndClaim, "text, int, int, bigint, text[], boolean",
                        "'probe', 0, 100, 30000000, ARRAY['p1', 'p2'], false", runs),
                Plans.genericRuns(fleetLike.completeAndClaimFromCursors,
                        "text, int, int, bigint, text[], int[], bigint[], text[], boolean",
                        "'probe', 0, 100, 30000000, ARRAY['p1', 'p2'], ARRAY[0], ARRAY[0::bigint], ARRAY['']::text[], false",
                        runs),
                Plans.genericRuns(fleetLike.completeKeys, "text, text[], boolean", "'probe', ARRAY['p3', 'p4'], false", runs));
        assertEquals(List.of(5L, 5L, 5L, 5L, 5L), generic,
                "runs planned generically, of " + runs + ": claimDue, claimFromCursors, completeAndClaim,"
                        + " completeAndClaimFromCursors, completeKeys");
    }

    /**
     * A queue new since the last ANALYZE (or grown since) is estimated from the statistics for its
     * name at one row; planned for that name, a claim read it through the primary key and filtered
     * its whole history on every claim (20,000 rows here); a complete or a release locked its keys,
     * and stats(), the health check and the reaper read, the same way. Each must reach its rows
     * through an index condition whatever the estimate: counted as the rows a filter dropped,
     * which history would make 20,000.
     */
    @Test
    void aQueueTheStatisticsHaveNotSeenIsNotReadThroughItsHistory() {
        List<List<String>> plans = List.of(
                analyzedCustomPlan(sql.claimDue, "text, int, int, bigint, boolean", "'unseen', 0, 10, 30000000, false"),
                analyzedCustomPlan(sql.claimFromCursors, "text, int, int, bigint, int[], bigint[], text[], boolean",
                        "'unseen', 0, 10, 30000000, ARRAY[0], ARRAY[0::bigint], ARRAY['']::text[], false"),
                analyzedCustomPlan(sql.completeAndClaimFromCursors,
                        "text, int, int, bigint, text[], int[], bigint[], text[], boolean",
                        "'unseen', 0, 10, 30000000, ARRAY['p1'], ARRAY[0], ARRAY[0::bigint], ARRAY['']::text[], false"),
                analyzedCustomPlan(sql.completeKeys, "text, text[], boolean", "'unseen', ARRAY['p2'], false"),
                analyzedCustomPlan(sql.releaseKeys, "text, text[], bigint, text", "'unseen', ARRAY['p3'], 0, NULL"),
                analyzedCustomPlan(sql.lookBehindCursors, "text, int", "'unseen', 0"),
                analyzedCustomPlan(sql.stats, "text, int", "'unseen', 0"),
                analyzedCustomPlan(sql.readyLongerThan, "text, int, bigint", "'unseen', 0, 300000000"),
                analyzedCustomPlan(sql.reapCompleted, "text, bigint, int", "'unseen', 86400000000, 1000"));
        for (List<String> plan : plans) {
            String text = String.join("\n", plan);
            assertTrue(rowsRemovedBy("Filter", text) < 100, "rows a filter dropped (the queue's history is " + UNSEEN_HISTORY + "):\n" + text);
        }
    }

    private static void assertLinear(List<String> plan) {
        String text = String.join("\n", plan);
        assertTrue(text.contains("rows=" + BATCH), "the claim leased the whole batch:\n" + text);
        assertEquals(0, rowsRemovedBy("Join Filter", text), "rows a join filter compared and dropped:\n" + text);
    }

    /** The rows every node's {@code filter} ("Filter", "Join Filter") dropped, summed over an EXPLAIN ANALYZE. */
    private static long rowsRemovedBy(String filter, String plan) {
        long removed = 0;
        Matcher counts = Pattern.compile("Rows Removed by " + filter + ": (\\d+)").matcher(plan);
        while (counts.find()) {
            removed += Long.parseLong(counts.group(1));
        }
        return removed;
    }
}
