package io.workqueue.examples.bench;

import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.time.Duration;

/**
 * The exact statements the library issues, read from its package-private {@code Sql} class by
 * reflection, so baselines run the library's own text (the enqueue baselines bind it directly; the
 * pgbench scripts are checked against it). They are rendered as for a queue with the defaults: no
 * notification, and completed rows kept until reaped. Also how the library paces its looks, read
 * from {@code CursorLook} the same way, so a report that says when the next look runs says what
 * the library does.
 */
final class LibrarySql {
    /** The claim from the head of the due index, in exact claim order. */
    final String claimDue;
    /** The claim most claims are: each band read from its cursor ($5 bands, $6 cursors in microseconds, $7 timed). */
    final String claimFromCursors;
    final String completeKeys;
    final String completeAndClaim;
    final String enqueue;
    /** The look behind the claim cursors: the first due item of every band ($1 queue, $2 attempt limit). */
    final String lookBehindCursors;
    /** {@code stats()}'s first statement, the completed count that also sets how the second is planned: $1 queue. */
    final String statsCompleted;
    /** {@code stats()}'s second statement, the pending counts: $1 queue, $2 attempt limit. */
    final String stats;
    /** {@code readyLongerThan(threshold)}: $1 queue, $2 attempt limit, $3 threshold in microseconds. */
    final String readyLongerThan;
    /** The library's own predicates ($2 the attempt limit), for baselines rebuilt from them. */
    final String due;
    final String leased;
    final String stalled;
    final String completed;

    /** How the library paces looks: at least this long apart ... */
    final Duration lookMinInterval;
    /** ... and this many times the last one's duration. */
    final int lookCostFactor;

    private LibrarySql(Object sql, Class<?> look) throws ReflectiveOperationException {
        this.claimDue = field(sql, "claimDue");
        this.claimFromCursors = field(sql, "claimFromCursors");
        this.completeKeys = field(sql, "completeKeys");
        this.completeAndClaim = field(sql, "completeAndClaim");
        this.enqueue = field(sql, "enqueue");
        this.lookBehindCursors = field(sql, "lookBehindCursors");
        this.statsCompleted = field(sql, "statsCompleted");
        this.stats = field(sql, "stats");
        this.readyLongerThan = field(sql, "readyLongerThan");
        this.due = (String) constant(sql.getClass(), "DUE");
        this.leased = (String) constant(sql.getClass(), "LEASED");
        this.stalled = (String) constant(sql.getClass(), "STALLED");
        this.completed = (String) constant(sql.getClass(), "COMPLETED");
        this.lookMinInterval = Duration.ofNanos((Long) constant(look, "MIN_INTERVAL_NANOS"));
        this.lookCostFactor = (Integer) constant(look, "COST_FACTOR");
    }

    static LibrarySql forPrefix(String prefix) {
        try {
            Class<?> type = Class.forName("io.workqueue.postgres.Sql");
            Constructor<?> constructor = type.getDeclaredConstructor(String.class, boolean.class);
            constructor.setAccessible(true);
            return new LibrarySql(constructor.newInstance(prefix, false),
                    Class.forName("io.workqueue.postgres.CursorLook"));
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot read the library's statements (io.workqueue.postgres.Sql,"
                    + " CursorLook)", e);
        }
    }

    private static Object constant(Class<?> type, String name) throws ReflectiveOperationException {
        Field field = type.getDeclaredField(name);
        field.setAccessible(true);
        return field.get(null);
    }

    /** The text the driver receives of the statement in field {@code name} (an {@code SqlStatement}). */
    private static String field(Object sql, String name) throws ReflectiveOperationException {
        Field field = sql.getClass().getDeclaredField(name);
        field.setAccessible(true);
        Object statement = field.get(sql);
        Method text = statement.getClass().getDeclaredMethod("text");
        text.setAccessible(true);
        return (String) text.invoke(statement);
    }
}
