package io.workqueue.testing;

import io.r2dbc.spi.ConnectionFactory;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.migrations.WorkQueueMigrations;
import java.util.function.UnaryOperator;

/** Builds {@code String}-keyed queues over a test table, and reads its columns where the API does not. */
public final class Queues {
    private Queues() {}

    /** A queue with a fresh name over the table of {@code prefix}, with default settings. */
    public static ReactiveWorkQueue<String> fresh(String prefix, String hint) {
        return over(TestDatabase.pool(), prefix, TestDatabase.uniqueName(hint), c -> c);
    }

    /** A queue with a fresh name over the table of {@code prefix}, with settings tweaked. */
    public static ReactiveWorkQueue<String> fresh(String prefix, String hint, UnaryOperator<WorkQueueConfig.Builder> tweak) {
        return over(TestDatabase.pool(), prefix, TestDatabase.uniqueName(hint), tweak);
    }

    /** A queue called {@code name} over the table of {@code prefix}, through {@code factory}. */
    public static ReactiveWorkQueue<String> over(ConnectionFactory factory, String prefix, String name,
            UnaryOperator<WorkQueueConfig.Builder> tweak) {
        return ReactiveWorkQueue.builder(factory, String.class)
                .config(tweak.apply(WorkQueueConfig.builder(name).tablePrefix(prefix)).build())
                .build();
    }

    /** The table of {@code prefix}. */
    public static String table(String prefix) {
        return WorkQueueMigrations.tableName(prefix);
    }

    /**
     * One column (or SQL expression over the row) of one item, as a string; {@code "null"} for
     * SQL NULL. Fails if the row does not exist.
     */
    public static String column(String prefix, ReactiveWorkQueue<?> queue, String key, String expression) {
        var values = TestDatabase.queryStrings("SELECT " + expression + " FROM " + table(prefix)
                + " WHERE queue_name = $1 AND item_key = $2", queue.name(), key);
        if (values.size() != 1) {
            throw new AssertionError("expected one row for key " + key + " in queue " + queue.name() + " but found " + values.size());
        }
        return values.get(0);
    }

    /**
     * Sets columns of one item directly ({@code set} is an SQL {@code SET} list), for states the
     * API cannot produce on demand, such as an availability an hour in the past.
     */
    public static void update(String prefix, ReactiveWorkQueue<?> queue, String key, String set) {
        var touched = TestDatabase.queryStrings("UPDATE " + table(prefix) + " SET " + set
                + " WHERE queue_name = $1 AND item_key = $2 RETURNING item_key", queue.name(), key);
        if (touched.size() != 1) {
            throw new AssertionError("expected to update key " + key + " in queue " + queue.name());
        }
    }

    /** How many rows the queue has in its table, completed or not. */
    public static long rows(String prefix, ReactiveWorkQueue<?> queue) {
        return TestDatabase.queryLong("SELECT count(*) FROM " + table(prefix) + " WHERE queue_name = $1", queue.name());
    }

    /** Whether the queue has a row for {@code key}. */
    public static boolean exists(String prefix, ReactiveWorkQueue<?> queue, String key) {
        return TestDatabase.queryLong("SELECT count(*) FROM " + table(prefix)
                + " WHERE queue_name = $1 AND item_key = $2", queue.name(), key) == 1;
    }
}
