package io.workqueue.examples.bench;

import java.lang.reflect.Constructor;
import java.lang.reflect.Field;

/**
 * The exact statements the library issues, read from its package-private {@code Sql} class by
 * reflection, so baselines run the library's own text (the enqueue baselines bind it directly; the
 * pgbench scripts are checked against it). They are rendered as for a queue with the defaults: no
 * notification, and completed rows kept until reaped.
 */
final class LibrarySql {
    final String claimDue;
    /** The claim most claims are: each band read from its cursor ($5 bands, $6 cursors in microseconds). */
    final String claimFromCursors;
    final String completeKeys;
    final String completeAndClaim;
    final String enqueue;

    private LibrarySql(Object sql) throws ReflectiveOperationException {
        this.claimDue = field(sql, "claimDue");
        this.claimFromCursors = field(sql, "claimFromCursors");
        this.completeKeys = field(sql, "completeKeys");
        this.completeAndClaim = field(sql, "completeAndClaim");
        this.enqueue = field(sql, "enqueue");
    }

    static LibrarySql forPrefix(String prefix) {
        try {
            Class<?> type = Class.forName("io.workqueue.postgres.Sql");
            Constructor<?> constructor = type.getDeclaredConstructor(String.class, boolean.class, boolean.class);
            constructor.setAccessible(true);
            return new LibrarySql(constructor.newInstance(prefix, false, false));
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot read the library's statements (io.workqueue.postgres.Sql)", e);
        }
    }

    private static String field(Object sql, String name) throws ReflectiveOperationException {
        Field field = sql.getClass().getDeclaredField(name);
        field.setAccessible(true);
        return (String) field.get(sql);
    }
}
