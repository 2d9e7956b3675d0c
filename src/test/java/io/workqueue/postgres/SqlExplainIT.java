package io.workqueue.postgres;

import static io.workqueue.postgres.Plans.explain;
import static io.workqueue.postgres.Plans.genericPlan;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.workqueue.testing.Queues;
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
 * Every statement in {@link Sql} is planned by the real server with typed bind parameters, so a
 * statement that no longer parses, names a column that is gone, or mistypes a parameter fails
 * here, before any behaviour test has to find out why.
 */
class SqlExplainIT {
    private static String prefix;
    private static Sql sql;
    /** The same table's statements for a queue that deletes rows on complete. */
    private static Sql deleting;

    @BeforeAll
    static void createTable() {
        prefix = TestDatabase.createTable();
        sql = new Sql(prefix, false);
        deleting = new Sql(prefix, true);
    }

    /** Every statement, with binds of the types the queue binds. */
    private static Map<String, Object[]> everyStatementWithBinds() {
        String[] keys = {"a", "b"};
        Integer[] bands = {5, 0};
        Long[] cursors = {ClaimCursors.HEAD, 1_700_000_000_000_000L};
        String[] cursorKeys = {ClaimCursors.FIRST_KEY, "k17"};
        String[] traces = {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", null};
        return Map.ofEntries(
                Map.entry("enqueue", new Object[] {"q", keys, new Integer[] {1, 2}, new Long[] {0L, 1_000L}}),
                Map.entry("enqueueInTransaction", new Object[] {"q", keys, new Integer[] {1, 2}, new Long[] {0L, 1_000L}}),
                Map.entry("enqueueNotifying", new Object[] {"q", keys, new Integer[] {1, 2}, new Long[] {0L, 1_000L},
                        "chan"}),
                Map.entry("enqueueTraced", new Object[] {"q", keys, new Integer[] {1, 2}, new Long[] {0L, 1_000L},
                        traces}),
                Map.entry("enqueueInTransactionTraced", new Object[] {"q", keys, new Integer[] {1, 2},
                        new Long[] {0L, 1_000L}, traces}),
                Map.entry("enqueueNotifyingTraced", new Object[] {"q", keys, new Integer[] {1, 2},
                        new Long[] {0L, 1_000L}, traces, "chan"}),
                Map.entry("claimDue", new Object[] {"q", 0, 10, 30_000_000L, true}),
                Map.entry("claimFromCursors", new Object[] {"q", 0, 10, 30_000_000L, bands, cursors, cursorKeys, true}),
                Map.entry("completeAndClaim", new Object[] {"q", 0, 10, 30_000_000L, keys, true}),
                Map.entry("completeAndClaimFromCursors", new Object[] {"q", 0, 10, 30_000_000L, keys, bands, cursors, cursorKeys, true}),
                Map.entry("completeKeys", new Object[] {"q", keys, true}),
                Map.entry("lookBehindCursors", new Object[] {"q", 0}),
                Map.entry("releaseKeys", new Object[] {"q", keys, 5_000_000L, "boom"}),
                Map.entry("handBackKeys", new Object[] {"q", keys, new Integer[] {1, 3},
                        new Integer[] {Sql.PRIOR_LEASE_NONE, Sql.PRIOR_LEASE_LAPSED}}),
                Map.entry("extendKeys", new Object[] {"q", keys, new Integer[] {1, 3},
                        new Long[] {1_700_000_000_000_000L, 1_700_000_000_000_001L}, new Long[] {30_000_000L, 60_000_000L}}),
                Map.entry("snoozeKeys", new Object[] {"q", keys, new Integer[] {1, 3},
                        new Long[] {1_700_000_000_000_000L, 1_700_000_000_000_001L}, 5_000_000L}),
                Map.entry("removeKeys", new Object[] {"q", keys}),
                Map.entry("reapCompleted", new Object[] {"q", 86_400_000_000L, 1000}),
                Map.entry("statsCompleted", new Object[] {"q"}),
                Map.entry("stats", new Object[] {"q", 3}),
                Map.entry("readyLongerThan", new Object[] {"q", 3, 1_000_000L}),
                Map.entry("keepHouse", new Object[] {"q", "host/1/ab", 45_000_000L}),
                Map.entry("publishReading", new Object[] {"q", "host/1/ab", 5L, 4L, 1L, 0L, 10_000L, true, 1_000L,
                        0L, 0, 0L, 2_000_000L}));
    }

    private static String statement(String field) {
        return statement(sql, field);
    }

    private static String statement(Sql of, String field) {
        try {
            return ((SqlStatement) Sql.class.getDeclaredField(field).get(of)).text();
        } catch (ReflectiveOperationException e) {
            throw new AssertionError("Sql has no statement " + field, e);
        }
    }

    @Test
    void everyStatementFieldOfSqlIsCoveredHere() {
        Set<String> fields = Arrays.stream(Sql.class.getDeclaredFields())
                .filter(f -> f.getType() == SqlStatement.class && !Modifier.isStatic(f.getModifiers()))
                .map(Field::getName)
                .filter(name -> !name.equals("table") && !name.equals("queuesTable"))
                .collect(Collectors.toCollection(TreeSet::new));
        assertEquals(new TreeSet<>(everyStatementWithBinds().keySet()), fields,
                "a statement was added to Sql without an EXPLAIN case, or one was removed");
    }

    @Test
    void theServerPlansEveryStatement() {
        everyStatementWithBinds().forEach((field, binds) -> {
            List<String> plan = explain(statement(field), binds);
            assertFalse(plan.isEmpty(), field);
        });
    }

    @Test
    void onlyTheEnqueueTheCallerAsksForNotifiesInItsTransaction() {
        assertTrue(sql.enqueueNotifying.text().contains("pg_notify($5::text"));
        assertFalse(sql.enqueue.text().contains("pg_notify"));
        assertFalse(sql.enqueueInTransaction.text().contains("pg_notify"));
        assertTrue(sql.enqueueInTransaction.text().contains("pg_current_xact_id()"));
    }

    /** The migrations' statements name no table in their text (the table is a value), so they are static too. */
    @Test
    void theServerPlansTheMigrationsStatements() {
        assertFalse(explain(Sql.SCHEMA_VERSION, sql.table).isEmpty());
        assertFalse(explain(Sql.SCHEMA_LOCK, Schema.VERSION_COMMENT + sql.table).isEmpty());
    }

    /** The notifier's statements name no table, so they are static, and planned here. */
    @Test
    void theServerPlansTheNotifiersStatements() {
        String[] xids = {"1", "2"};
        for (boolean notify : new boolean[] {false, true}) {
            assertFalse(explain(Sql.NOTIFIER_TICK, "chan", xids, notify).isEmpty());
            assertFalse(explain(Sql.NOTIFIER_TICK, "chan", new String[0], notify).isEmpty());
        }
        // Its own commit, asynchronous: the notify lock is not held through a WAL flush.
        assertTrue(Sql.NOTIFIER_TICK.text().contains("set_config('synchronous_commit', 'off', true)"),
                Sql.NOTIFIER_TICK.text());
    }

    @Test
    void deleteOnCompleteChangesOnlyTheTwoCompletingStatements() {
        Set<String> differ = everyStatementWithBinds().keySet().stream()
                .filter(field -> !statement(sql, field).equals(statement(deleting, field)))
                .collect(Collectors.toCollection(TreeSet::new));
        assertEquals(Set.of("completeAndClaim", "completeAndClaimFromCursors", "completeKeys"), differ);
        for (String field : differ) {
            String text = statement(deleting, field);
            assertFalse(text.contains("completed_at = now()"), field + " still marks rows completed:\n" + text);
            assertTrue(text.contains("DELETE FROM " + Queues.table(prefix) + " AS q"), field + ":\n" + text);
            // The lock-ordering CTE is what keeps writers deadlock-free, and the count rests on
            // one returned row per item completed: both must survive the switch.
            assertTrue(text.contains("ORDER BY item_key\n    FOR UPDATE\n"), field + ":\n" + text);
            assertTrue(text.contains("RETURNING q.item_key\n"), field + ":\n" + text);
        }
    }

    @Test
    void theServerPlansTheDeletingStatements() {
        Map<String, Object[]> binds = everyStatementWithBinds();
        for (String field : List.of("completeKeys", "completeAndClaim", "completeAndClaimFromCursors")) {
            List<String> plan = explain(statement(deleting, field), binds.get(field));
            assertTrue(String.join("\n", plan).contains("Delete on " + Queues.table(prefix)), field + ":\n" + plan);
        }
        assertFalse(explain(deleting.completeKeys, "q", new String[0], false).isEmpty());
        assertFalse(explain(deleting.completeAndClaim, "q", 0, 10, 30_000_000L, new String[0], false).isEmpty());
    }

    @Test
    void releasePlansWithoutACause() {
        List<String> plan = explain(sql.releaseKeys, "q", new String[] {"a"}, -1L, new Plans.Null(String.class));
        assertFalse(plan.isEmpty());
    }

    @Test
    void keyStatementsPlanWithEmptyArrays() {
        assertFalse(explain(sql.enqueue, "q", new String[0], new Integer[0], new Long[0]).isEmpty());
        assertFalse(explain(sql.completeKeys, "q", new String[0], false).isEmpty());
        assertFalse(explain(sql.removeKeys, "q", new String[0]).isEmpty());
    }

    @Test
    void everyStatementNamesOnlyTheTableOfItsPrefix() {
        for (String field : everyStatementWithBinds().keySet()) {
            String text = statement(field).replaceAll("--[^\n]*", "");
            // The items table, or (for housekeeping) the per-queue table beside it.
            assertTrue(text.contains(prefix + "_work_queue_items") || text.contains(prefix + "_work_queue_queues"), field);
            assertFalse(text.replace(prefix + "_work_queue_items", "").replace(prefix + "_work_queue_queues", "")
                    .contains("work_queue_"), field + ": " + text);
        }
    }

    @Test
    void theClaimUsesThePartialDueIndex() {
        String table = prefix + "_work_queue_items";
        String queue = TestDatabase.uniqueName("explain");
        // A backlog in this queue, history (completed rows) beside it, and other queues' work.
        TestDatabase.queryStrings("INSERT INTO " + table + " (queue_name, item_key, priority, completed_at)"
                        + " SELECT CASE WHEN i % 4 = 0 THEN $1 ELSE 'other-' || (i % 3) END,"
                        + "        'k' || i, i % 5, CASE WHEN i % 2 = 1 THEN now() END"
                        + " FROM generate_series(1, 4000) AS i",
                queue);
        TestDatabase.execute("ANALYZE " + table);

        List<String> cursorClaim = explain(sql.claimFromCursors, queue, 0, 10, 30_000_000L, new Integer[] {4, 2, 0},
                new Long[] {ClaimCursors.HEAD, ClaimCursors.HEAD, 1_700_000_000_000_000L},
                new String[] {ClaimCursors.FIRST_KEY, ClaimCursors.FIRST_KEY, "k17"}, true);
        for (List<String> plan : List.of(explain(sql.claimDue, queue, 0, 10, 30_000_000L, true), cursorClaim,
                explain(sql.lookBehindCursors, queue, 0))) {
            String text = String.join("\n", plan);
            assertTrue(text.contains(table + "_due_idx"), "claims and looks should scan the partial due index:\n" + text);
            assertFalse(text.contains("Seq Scan"), text);
        }
        // The cursor, time and key, is where the index scan starts: not a filter over the band's head.
        assertTrue(cursorClaim.stream().anyMatch(line -> line.contains("Index Cond: ")
                        && line.contains("ROW(available_at, item_key) >= ROW(")),
                () -> "the cursor should be an index condition:\n" + String.join("\n", cursorClaim));
    }

    @Test
    void theReaperUsesThePartialReapIndex() {
        String table = prefix + "_work_queue_items";
        String queue = TestDatabase.uniqueName("reap");
        TestDatabase.queryStrings("INSERT INTO " + table + " (queue_name, item_key, completed_at)"
                        + " SELECT CASE WHEN i % 4 = 0 THEN $1 ELSE 'hist-' || (i % 3) END, 'r' || i,"
                        + "        CASE WHEN i % 3 <> 0 THEN now() - i * INTERVAL '1 minute' END"
                        + " FROM generate_series(1, 4000) AS i",
                queue);
        TestDatabase.execute("ANALYZE " + table);

        String text = String.join("\n", explain(sql.reapCompleted, queue, 3_600_000_000L, 100));

        assertTrue(text.contains(table + "_reap_idx"), "the reaper should scan the partial reap index:\n" + text);
    }

    /**
     * A prepared statement may switch to a generic plan after five runs, and a generic plan cannot
     * see {@code LIMIT $3}: it guesses a tenth of the table. The leasing and reaping joins must not
     * turn that guess into a scan of the whole table.
     */
    @Test
    void genericPlansNeverScanTheWholeTable() {
        // A table of its own holding one queue, as most deployments have: the estimates then say
        // the queue is the whole table, which is what tempts a generic plan into a scan of it.
        String ownPrefix = TestDatabase.createTable();
        Sql ownSql = new Sql(ownPrefix, false);
        Sql ownDeleting = new Sql(ownPrefix, true);
        String table = ownPrefix + "_work_queue_items";
        String queue = TestDatabase.uniqueName("generic");
        TestDatabase.queryStrings("INSERT INTO " + table + " (queue_name, item_key, completed_at)"
                        + " SELECT $1, 'g' || i, CASE WHEN i % 5 = 0 THEN now() - INTERVAL '2 days' END"
                        + " FROM generate_series(1, 20000) AS i",
                queue);
        TestDatabase.execute("ANALYZE " + table);
        String q = "'" + queue + "'";
        Map<String, List<String>> plans = Map.of(
                "claimDue", genericPlan(ownSql.claimDue, "text, int, int, bigint, boolean", q + ", 0, 100, 30000000, true"),
                "completeAndClaim", genericPlan(ownSql.completeAndClaim, "text, int, int, bigint, text[], boolean",
                        q + ", 0, 100, 30000000, '{g1,g3}', true"),
                "claimFromCursors", genericPlan(ownSql.claimFromCursors, "text, int, int, bigint, int[], bigint[], text[], boolean",
                        q + ", 0, 100, 30000000, '{0}', '{1700000000000000}', '{g7}', true"),
                "completeAndClaimFromCursors", genericPlan(ownSql.completeAndClaimFromCursors,
                        "text, int, int, bigint, text[], int[], bigint[], text[], boolean",
                        q + ", 0, 100, 30000000, '{g1,g3}', '{0}', '{1700000000000000}', '{g7}', true"),
                "lookBehindCursors", genericPlan(ownSql.lookBehindCursors, "text, int", q + ", 0"),
                "reapCompleted", genericPlan(ownSql.reapCompleted, "text, bigint, int", q + ", 3600000000, 1000"),
                "completeKeys", genericPlan(ownSql.completeKeys, "text, text[], boolean", q + ", '{g1,g3}', true"),
                "completeKeys (deleting)", genericPlan(ownDeleting.completeKeys, "text, text[], boolean", q + ", '{g1,g3}', true"),
                "completeAndClaim (deleting)", genericPlan(ownDeleting.completeAndClaim, "text, int, int, bigint, text[], boolean",
                        q + ", 0, 100, 30000000, '{g1,g3}', true"));

        plans.forEach((name, plan) -> {
            String text = String.join("\n", plan);
            // A generic plan shows parameters ($n) where a custom one shows the arguments; the queue's
            // $1 may sit only in an InitPlan (this_queue), which prints no expression.
            assertTrue(java.util.regex.Pattern.compile("\\$\\d").matcher(text).find(),
                    name + " was not planned generically:\n" + text);
            assertFalse(text.contains("Seq Scan"), name + " scans the whole table under a generic plan:\n" + text);
        });
    }

    /**
     * Statistics that say almost nothing is pending (a long history, a short backlog: the normal
     * state of a queue) made the planner lock a completion's keys by walking the partial due index
     * and filtering on the key, rather than by looking the keys up: cheap while the index is clean,
     * seconds per statement while a held horizon fills it with dead entries. Every statement that
     * locks named keys must reach them through the primary key, custom plan or generic.
     */
    @Test
    void namedKeysAreLockedThroughThePrimaryKeyWhatTheStatisticsSay() {
        String ownPrefix = TestDatabase.createTable();
        Sql ownSql = new Sql(ownPrefix, false);
        Sql ownDeleting = new Sql(ownPrefix, true);
        String table = ownPrefix + "_work_queue_items";
        String queue = TestDatabase.uniqueName("history");
        TestDatabase.queryStrings("INSERT INTO " + table + " (queue_name, item_key, completed_at)"
                        + " SELECT $1, 'h' || i, CASE WHEN i > 50 THEN now() END FROM generate_series(1, 100000) AS i",
                queue);
        TestDatabase.execute("ANALYZE " + table);
        String[] keys = {"h1", "h2", "h3"};
        String q = "'" + queue + "'";
        Map<String, List<String>> plans = Map.of(
                "completeKeys", explain(ownSql.completeKeys, queue, keys, true),
                "completeKeys (deleting)", explain(ownDeleting.completeKeys, queue, keys, true),
                "completeAndClaim", explain(ownSql.completeAndClaim, queue, 0, 10, 30_000_000L, keys, true),
                "releaseKeys", explain(ownSql.releaseKeys, queue, keys, 0L, "boom"),
                "removeKeys", explain(ownSql.removeKeys, queue, keys),
                "extendKeys", explain(ownSql.extendKeys, queue, keys, new Integer[] {1, 1, 1},
                        new Long[] {1L, 1L, 1L}, new Long[] {1_000_000L, 1_000_000L, 1_000_000L}),
                "snoozeKeys", explain(ownSql.snoozeKeys, queue, keys, new Integer[] {1, 1, 1}, new Long[] {1L, 1L, 1L}, 0L),
                "completeKeys (generic)", genericPlan(ownSql.completeKeys, "text, text[], boolean", q + ", '{h1,h2,h3}', true"),
                "releaseKeys (generic)", genericPlan(ownSql.releaseKeys, "text, text[], bigint, text",
                        q + ", '{h1,h2,h3}', 0, 'boom'"));
        plans.forEach((name, plan) -> {
            String text = String.join("\n", plan);
            String target = text.substring(text.indexOf("CTE target"));
            target = target.substring(0, target.indexOf("CTE ", 4) < 0 ? target.length() : target.indexOf("CTE ", 4));
            assertTrue(target.contains(table + "_pkey"), name + " locks its keys through the primary key:\n" + text);
            assertFalse(target.contains("_due_idx"), name + " walks the due index for its keys:\n" + text);
        });
    }
}
