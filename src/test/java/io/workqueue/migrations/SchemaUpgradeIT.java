package io.workqueue.migrations;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.r2dbc.spi.Connection;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueAdmin;
import io.workqueue.WorkQueueConfig;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Schema versions: a table created by the first release's DDL, full of items in every state, is
 * upgraded in place by {@code apply} without losing or changing any of them, ends up exactly like a
 * table this release creates, and serves a queue; at the current version {@code apply} touches
 * nothing, so it does not wait on the table's readers.
 */
class SchemaUpgradeIT {
    private static final Duration WAIT = Duration.ofSeconds(30);
    /** Every column of version 1, in a fixed order: what an upgrade must keep as it was. */
    private static final String VERSION_1_ROW = "(queue_name, item_key, priority, attempts, enqueued_at, available_at,"
            + " lease_until, completed_at, last_error)::text";

    private static int version(String prefix) {
        return WorkQueueMigrations.version(TestDatabase.pool(), prefix).block(WAIT);
    }

    private static List<String> rows(String table) {
        return TestDatabase.queryStrings("SELECT " + VERSION_1_ROW + " FROM " + table + " ORDER BY queue_name, item_key");
    }

    /** The table's shape without its name: columns with types and defaults, indexes, options. */
    private static List<String> shape(String prefix) {
        String table = WorkQueueMigrations.tableName(prefix);
        List<String> columns = TestDatabase.queryStrings("SELECT a.attname || ' ' || format_type(a.atttypid, a.atttypmod)"
                + " || ' ' || a.attnotnull || ' ' || COALESCE(pg_get_expr(d.adbin, d.adrelid), '') || ' '"
                + " || COALESCE((SELECT collname FROM pg_collation WHERE oid = a.attcollation), '')"
                + " FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum"
                + " WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attname", table);
        List<String> indexes = TestDatabase.queryStrings("SELECT replace(indexname || ' ' || indexdef, $1, 'T')"
                + " FROM pg_indexes WHERE schemaname = current_schema() AND tablename = $1 ORDER BY indexname", table);
        List<String> options = TestDatabase.queryStrings("SELECT COALESCE(reloptions::text, '') || ' '"
                + " || obj_description($1::regclass, 'pg_class') FROM pg_class WHERE oid = $1::regclass", table);
        return java.util.stream.Stream.of(columns, indexes, options).flatMap(List::stream).toList();
    }

    private static String createVersion1(String prefix) {
        // One multi-statement script, as a migration tool would run it.
        TestDatabase.execute(WorkQueueMigrations.versionedScript(1, prefix));
        return WorkQueueMigrations.tableName(prefix);
    }

    @Test
    void aFirstReleaseTableFullOfItemsIsUpgradedInPlaceKeepingEveryItem() {
        String prefix = TestDatabase.uniquePrefix();
        assertEquals(0, version(prefix), "no table yet");
        String table = createVersion1(prefix);
        assertEquals(1, version(prefix), "the first release recorded no version");
        // Items in every state the first release could leave, in two queues.
        TestDatabase.execute("INSERT INTO " + table + " (queue_name, item_key, priority, attempts, available_at,"
                + " lease_until, completed_at, last_error)"
                + " SELECT 'q' || (i % 2), 'k' || i, i % 3, i % 4,"
                + "     now() + CASE WHEN i % 5 = 0 THEN INTERVAL '1 hour' ELSE -(i * INTERVAL '1 second') END,"
                + "     CASE i % 7 WHEN 0 THEN now() + INTERVAL '1 minute' WHEN 1 THEN now() - INTERVAL '1 minute'"
                + "         ELSE 'epoch' END,"
                + "     CASE WHEN i % 6 = 0 THEN now() - i * INTERVAL '1 minute' END,"
                + "     CASE WHEN i % 4 = 3 THEN 'boom ' || i END"
                + " FROM generate_series(1, 1000) AS i");
        List<String> before = rows(table);
        assertEquals(1000, before.size());

        WorkQueueMigrations.apply(TestDatabase.pool(), prefix).block(WAIT);

        assertEquals(WorkQueueMigrations.SCHEMA_VERSION, version(prefix));
        assertEquals(before, rows(table), "every item kept, every column as it was");
        assertEquals(0, TestDatabase.queryLong("SELECT count(*) FROM " + table + " WHERE requested_at IS NOT NULL"));
        String fresh = TestDatabase.createTable();
        assertEquals(shape(fresh), shape(prefix), "upgraded in place, the table is the one this release creates");

        // And it serves this release's queue, including what version 2 added.
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(TestDatabase.pool(), String.class)
                .config(WorkQueueConfig.builder("q1").tablePrefix(prefix).build())
                .build();
        long due = TestDatabase.queryLong("SELECT count(*) FROM " + table + " WHERE queue_name = 'q1'"
                + " AND completed_at IS NULL AND lease_until <= now() AND available_at <= now()");
        List<Item<String>> claimed = queue.claim(1000, Duration.ofMinutes(5)).block(WAIT);
        assertEquals(due, claimed.size());
        String key = claimed.get(0).key();
        queue.enqueueKeys(key).block(WAIT);
        assertEquals(0L, queue.complete(key).block(WAIT), "enqueued during its lease: it runs again");
    }

    /** The columns of version {@code v}, in a fixed order: what an upgrade from it must keep. */
    private static String rowAt(int v) {
        return "(queue_name, item_key, priority, attempts, enqueued_at, available_at, lease_until, completed_at,"
                + " last_error" + (v >= 2 ? ", requested_at" : "") + (v >= 4 ? ", claimed_at" : "") + ")::text";
    }

    @ParameterizedTest(name = "from version {0}")
    @ValueSource(ints = {1, 2, 3, 4})
    void aTableOfEveryEarlierVersionFullOfItemsInEveryStateIsUpgradedKeepingThemAll(int from) {
        String prefix = TestDatabase.uniquePrefix();
        for (int v = 1; v <= from; v++) {
            TestDatabase.execute(WorkQueueMigrations.versionedScript(v, prefix));
        }
        String table = WorkQueueMigrations.tableName(prefix);
        assertEquals(from == 1 ? 1 : from, version(prefix));
        // Every state: pending due, delayed, leased, lapsed, handed back, completed, failed with a
        // last error; and, where the version has them, re-requested during a lease and claimed at.
        TestDatabase.execute("INSERT INTO " + table + " (queue_name, item_key, priority, attempts, available_at,"
                + " lease_until, completed_at, last_error" + (from >= 2 ? ", requested_at" : "")
                + (from >= 4 ? ", claimed_at" : "") + ")"
                + " SELECT 'q' || (i % 2), 'k' || i, i % 3, i % 4,"
                + "     now() + CASE WHEN i % 5 = 0 THEN INTERVAL '1 hour' ELSE -(i * INTERVAL '1 second') END,"
                + "     CASE i % 7 WHEN 0 THEN now() + INTERVAL '1 minute' WHEN 1 THEN now() - INTERVAL '1 minute'"
                + "         WHEN 2 THEN '-infinity' ELSE 'epoch' END,"
                + "     CASE WHEN i % 6 = 0 THEN now() - i * INTERVAL '1 minute' END,"
                + "     CASE WHEN i % 4 = 3 THEN 'boom ' || i END"
                + (from >= 2 ? ", CASE WHEN i % 7 = 0 AND i % 3 = 0 THEN now() END" : "")
                + (from >= 4 ? ", CASE WHEN i % 7 IN (0, 1) THEN now() - INTERVAL '2 minutes' END" : "")
                + " FROM generate_series(1, 1000) AS i");
        List<String> before = TestDatabase.queryStrings("SELECT " + rowAt(from) + " FROM " + table
                + " ORDER BY queue_name, item_key");
        assertEquals(1000, before.size());
        if (from >= 4) {
            // Paused before the upgrade (schema 4 has the column): still paused after it.
            TestDatabase.execute("INSERT INTO " + io.workqueue.internal.base.TableNames.queues(prefix)
                    + " (queue_name, keeper, keeper_until, paused_at) VALUES ('q0', '', '-infinity', now())");
        }

        WorkQueueMigrations.apply(TestDatabase.pool(), prefix).block(WAIT);

        assertEquals(WorkQueueMigrations.SCHEMA_VERSION, version(prefix));
        assertEquals(before, TestDatabase.queryStrings("SELECT " + rowAt(from) + " FROM " + table
                + " ORDER BY queue_name, item_key"), "every item kept, every column as it was");
        assertEquals(0, TestDatabase.queryLong("SELECT count(*) FROM " + table + " WHERE trace_contexts IS NOT NULL"),
                "no item gains a trace context by the upgrade");
        assertEquals(shape(TestDatabase.createTable()), shape(prefix), "the table this release creates");

        // Queue q0 paused (before the upgrade, or now): it hands out nothing and says why.
        WorkQueueAdmin admin = WorkQueueAdmin.builder(TestDatabase.pool()).tablePrefix(prefix).build();
        if (from < 4) {
            admin.pause("q0").block(WAIT);
        }
        ReactiveWorkQueue<String> paused = ReactiveWorkQueue.builder(TestDatabase.pool(), String.class)
                .config(WorkQueueConfig.builder("q0").tablePrefix(prefix).build())
                .build();
        assertEquals(List.of(), paused.claim(1000, Duration.ofMinutes(5)).block(WAIT), "a paused queue leases nothing");
        assertTrue(paused.stats().block(WAIT).paused());
        assertTrue(paused.stats().block(WAIT).ready() > 0, "its due items are still counted as ready");

        // A queue storing trace contexts serves it: the upgraded items claim and complete as before.
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(TestDatabase.pool(), String.class)
                .config(WorkQueueConfig.builder("q1").tablePrefix(prefix).storeTraceContexts(true).build())
                .build();
        long due = TestDatabase.queryLong("SELECT count(*) FROM " + table + " WHERE queue_name = 'q1'"
                + " AND completed_at IS NULL AND lease_until <= now() AND available_at <= now()");
        List<Item<String>> claimed = queue.claim(1000, Duration.ofMinutes(5)).block(WAIT);
        assertEquals(due, claimed.size());
        assertTrue(claimed.stream().allMatch(item -> item.traceContexts().isEmpty()));
        assertEquals(due, queue.complete(claimed.stream().map(Item::key).toList()).block(WAIT),
                "every claimed item completes");
    }

    @Test
    void theVersionedScriptsInOrderMakeTheSameTableAsApply() {
        String prefix = TestDatabase.uniquePrefix();
        createVersion1(prefix);
        for (int v = 2; v <= WorkQueueMigrations.SCHEMA_VERSION; v++) {
            TestDatabase.execute(WorkQueueMigrations.versionedScript(v, prefix));
        }
        assertEquals(WorkQueueMigrations.SCHEMA_VERSION, version(prefix));
        assertEquals(shape(TestDatabase.createTable()), shape(prefix));
    }

    @Test
    void atTheCurrentVersionApplyTouchesNothingSoItDoesNotWaitOnTheTablesReaders() {
        String prefix = TestDatabase.createTable();
        String table = WorkQueueMigrations.tableName(prefix);
        // A reader in the middle of a transaction holds the table's ACCESS SHARE lock, which any
        // ALTER TABLE (even one that finds nothing to do) would queue behind, and every claim and
        // enqueue behind that.
        Connection reader = Mono.from(TestDatabase.plain().create()).block(WAIT);
        try {
            Mono.from(reader.beginTransaction()).block(WAIT);
            Flux.from(reader.createStatement("SELECT count(*) FROM " + table).execute())
                    .concatMap(r -> r.map((row, meta) -> 1)).blockLast(WAIT);

            WorkQueueMigrations.apply(TestDatabase.pool(), prefix).block(Duration.ofSeconds(10));

            assertFalse(TestDatabase.queryStrings("SELECT mode FROM pg_locks WHERE relation = $1::regclass",
                    table).contains("AccessExclusiveLock"));
        } finally {
            Mono.from(reader.close()).block(WAIT);
        }
        assertTrue(version(prefix) == WorkQueueMigrations.SCHEMA_VERSION);
    }
}
