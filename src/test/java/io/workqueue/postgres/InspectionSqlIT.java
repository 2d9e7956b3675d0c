package io.workqueue.postgres;

import static io.workqueue.postgres.Plans.explain;
import static io.workqueue.postgres.Plans.genericPlan;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.workqueue.testing.TestDatabase;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The admin's statements ({@link InspectionSql}) are planned by the real server, decide each state
 * with the very predicate the claim and the stats read use, and reach their rows through the index
 * meant for them whatever the statistics say: a listing never scans the table, an action locks its
 * keys through the primary key.
 */
class InspectionSqlIT {
    private static String prefix;
    private static String table;
    private static InspectionSql sql;
    private static String queue;

    @BeforeAll
    static void fill() {
        // One queue of this table is long, with history beside it and other queues' rows: what
        // tempts a planner into walking the wrong index or the whole table.
        prefix = TestDatabase.createTable();
        table = prefix + "_work_queue_items";
        sql = new InspectionSql(prefix);
        queue = TestDatabase.uniqueName("inspect");
        TestDatabase.queryStrings("INSERT INTO " + table + " (queue_name, item_key, priority, attempts, completed_at)"
                        + " SELECT CASE WHEN i % 5 = 0 THEN 'other-' || (i % 3) ELSE $1 END, 'k' || i, i % 4, i % 7,"
                        + "        CASE WHEN i % 3 = 0 THEN now() - (i % 100) * INTERVAL '1 second' END"
                        + " FROM generate_series(1, 60000) AS i",
                queue);
        TestDatabase.execute("ANALYZE " + table);
    }

    private static Map<String, Object[]> everyStatementWithBinds() {
        String[] keys = {"k1", "k2"};
        return Map.ofEntries(
                Map.entry("statsCompleted", new Object[] {queue}),
                Map.entry("stats", new Object[] {queue, 3}),
                Map.entry("queueNames", new Object[] {}),
                Map.entry("item", new Object[] {queue, 3, "k1"}),
                Map.entry("readyPage", firstPendingPage()),
                Map.entry("delayedPage", firstPendingPage()),
                Map.entry("leasedPage", firstPendingPage()),
                Map.entry("stalledPage", nextPendingPage()),
                Map.entry("completedPage", new Object[] {queue, 3, new Plans.Null(Long.class), new Plans.Null(String.class), 50, 10_000}),
                Map.entry("retryKeys", new Object[] {queue, 3, keys}),
                Map.entry("removeKeys", new Object[] {queue, keys}),
                Map.entry("purgeCompleted", new Object[] {queue, 100}),
                Map.entry("pause", new Object[] {queue}),
                Map.entry("resume", new Object[] {queue}));
    }

    private static Object[] firstPendingPage() {
        return new Object[] {queue, 3, new Plans.Null(Integer.class), new Plans.Null(Long.class), new Plans.Null(String.class),
                (long) Integer.MAX_VALUE, 50, 10_000};
    }

    private static Object[] nextPendingPage() {
        return new Object[] {queue, 3, 2, 1_700_000_000_000_000L, "k100", 1L, 50, 10_000};
    }

    private static String statement(String field) {
        try {
            return ((SqlStatement) InspectionSql.class.getDeclaredField(field).get(sql)).text();
        } catch (ReflectiveOperationException e) {
            throw new AssertionError("InspectionSql has no statement " + field, e);
        }
    }

    @Test
    void everyStatementFieldIsCoveredHere() {
        Set<String> fields = Arrays.stream(InspectionSql.class.getDeclaredFields())
                .filter(f -> f.getType() == SqlStatement.class && !Modifier.isStatic(f.getModifiers()))
                .map(Field::getName)
                .filter(name -> !name.equals("table"))
                .collect(Collectors.toCollection(TreeSet::new));
        assertEquals(new TreeSet<>(everyStatementWithBinds().keySet()), fields);
    }

    @Test
    void theServerPlansEveryStatement() {
        everyStatementWithBinds().forEach((field, binds) -> assertFalse(explain(statement(field), binds).isEmpty(), field));
        assertFalse(explain(sql.readyPage, nextPendingPage()).isEmpty());
        assertFalse(explain(sql.completedPage, queue, 3, 1_700_000_000_000_000L, "k9", 50, 10_000).isEmpty());
    }

    /**
     * One home per concept: each state is the claim's and the stats read's own predicate text, so
     * "ready" in a listing can never drift from what a claim hands out.
     */
    @Test
    void theStatesAreThePredicatesClaimsAndStatsUse() {
        Sql queueSql = new Sql(prefix, false);
        assertTrue(queueSql.claimDue.text().contains(Sql.DUE));
        for (String predicate : List.of(Sql.DUE, Sql.LEASED, Sql.STALLED)) {
            assertTrue(queueSql.stats.text().contains("FILTER (WHERE " + predicate + ")"), predicate);
        }
        // Completed is counted apart (up to a limit, through the reap index), by the same predicate.
        assertTrue(queueSql.statsCompleted.text().contains("AND " + Sql.COMPLETED), Sql.COMPLETED);
        assertTrue(queueSql.readyLongerThan.text().contains(Sql.DUE) && queueSql.readyLongerThan.text().contains(Sql.READY_SINCE),
                "the health check asks the claim's own question");
        assertTrue(queueSql.stats.text().contains("min(" + Sql.READY_SINCE + ")"), "and the age it measures is the stats'");
        assertEquals(queueSql.stats.text(), sql.stats.text(), "the admin's stats read is the queue's");
        assertEquals(queueSql.statsCompleted.text(), sql.statsCompleted.text(), "both of its statements");
        assertEquals(queueSql.removeKeys.text(), sql.removeKeys.text(), "and its remove is the queue's");
        Map<String, String> pages = Map.of("readyPage", Sql.DUE, "delayedPage", Sql.DELAYED, "leasedPage", Sql.LEASED,
                "stalledPage", Sql.STALLED, "completedPage", Sql.COMPLETED);
        pages.forEach((field, predicate) -> assertTrue(statement(field).contains("(" + predicate + ") AS wanted"), field));
        for (String predicate : List.of(Sql.DUE, Sql.DELAYED, Sql.LEASED, Sql.STALLED, Sql.COMPLETED)) {
            assertTrue(sql.item.text().contains("(" + predicate + ") AS is_"), predicate);
        }
        assertTrue(sql.retryKeys.text().contains("NOT (" + Sql.LEASED + ") AND ((" + Sql.STALLED + ") OR (" + Sql.DELAYED + "))"));
    }

    @Test
    void pagesReadTheirIndexNeverTheTable() {
        Map<String, List<String>> plans = Map.of(
                "ready, first", explain(sql.readyPage, firstPendingPage()),
                "stalled, next", explain(sql.stalledPage, nextPendingPage()),
                "ready (generic)", genericPlan(sql.readyPage, "text, int, int, bigint, text, bigint, int, int",
                        "'" + queue + "', 3, 2, 1700000000000000, 'k100', 1, 50, 10000"),
                "completed, next", explain(sql.completedPage, queue, 3, 1_700_000_000_000_000L, "k9", 50, 10_000),
                "completed (generic)", genericPlan(sql.completedPage, "text, int, bigint, text, int, int",
                        "'" + queue + "', 3, 1700000000000000, 'k9', 50, 10000"));
        plans.forEach((name, plan) -> {
            String text = String.join("\n", plan);
            String index = name.startsWith("completed") ? "_reap_idx" : "_due_idx";
            assertTrue(text.contains(table + index), name + " should read " + index + ":\n" + text);
            assertFalse(text.contains("Seq Scan"), name + " scans the table:\n" + text);
        });
        String detail = String.join("\n", explain(sql.item, queue, 3, "k1"));
        assertTrue(detail.contains(table + "_pkey"), detail);
        String names = String.join("\n", explain(sql.queueNames));
        assertTrue(names.contains(table + "_pkey") && !names.contains("Seq Scan"), names);
    }

    @Test
    void actionsLockTheirKeysThroughThePrimaryKey() {
        String[] keys = {"k1", "k2", "k3"};
        String q = "'" + queue + "'";
        Map<String, List<String>> plans = Map.of(
                "retryKeys", explain(sql.retryKeys, queue, 3, keys),
                "removeKeys", explain(sql.removeKeys, queue, keys),
                "purgeCompleted", explain(sql.purgeCompleted, queue, 100),
                "retryKeys (generic)", genericPlan(sql.retryKeys, "text, int, text[]", q + ", 3, '{k1,k2,k3}'"),
                "purgeCompleted (generic)", genericPlan(sql.purgeCompleted, "text, int", q + ", 100"));
        plans.forEach((name, plan) -> {
            String text = String.join("\n", plan);
            // From the target CTE to the next node at its level ("CTE Scan" lines are deeper).
            String target = text.substring(text.indexOf("CTE target"));
            int next = target.indexOf("\n  ", 4);
            while (next >= 0 && target.startsWith("\n   ", next)) {
                next = target.indexOf("\n  ", next + 1);
            }
            target = next < 0 ? target : target.substring(0, next);
            assertTrue(target.contains(table + "_pkey"), name + " locks its keys through the primary key:\n" + text);
            assertFalse(text.contains("Seq Scan"), name + ":\n" + text);
        });
        assertTrue(String.join("\n", plans.get("purgeCompleted")).contains(table + "_reap_idx"),
                "the purge finds the oldest completions through the reap index");
    }
}
