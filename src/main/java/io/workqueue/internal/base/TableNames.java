package io.workqueue.internal.base;

import org.jspecify.annotations.Nullable;

/**
 * The names of the queue's table and its indexes for a table prefix, and whether a prefix can make
 * them: the prefix is rendered into SQL, so it must be a plain identifier, and the longest name it
 * makes must fit PostgreSQL's identifier limit.
 */
public final class TableNames {
    /** The table's name without a prefix. */
    public static final String TABLE_BASE_NAME = "work_queue_items";
    /** The name of the table of per-queue rows (the housekeeper and its reading) without a prefix. */
    public static final String QUEUES_BASE_NAME = "work_queue_queues";
    /** The suffix of the longest name derived from the table's (its reap index). */
    private static final String LONGEST_SUFFIX = "_reap_idx";

    private TableNames() {}

    /**
     * Why {@code tablePrefix} cannot make the table's names, naming the rule it breaks;
     * {@code null} when it can ({@code ""} is the default table's).
     */
    public static @Nullable String prefixProblem(@Nullable String tablePrefix) {
        if (tablePrefix == null) {
            return "tablePrefix must not be null; use \"\" for the default table";
        }
        if (tablePrefix.isEmpty()) {
            return null;
        }
        String plain = Identifiers.problem("tablePrefix", tablePrefix);
        if (plain != null) {
            return plain;
        }
        String longest = rendered(tablePrefix) + TABLE_BASE_NAME + LONGEST_SUFFIX;
        if (longest.length() > Identifiers.MAX_IDENTIFIER_BYTES) {
            return "tablePrefix must be at most "
                    + (Identifiers.MAX_IDENTIFIER_BYTES - (longest.length() - tablePrefix.length()))
                    + " bytes so that index " + longest + " fits PostgreSQL's "
                    + Identifiers.MAX_IDENTIFIER_BYTES + "-byte limit, but was " + tablePrefix.length();
        }
        return null;
    }

    /** The prefix as it starts every name: {@code "prefix_"}, or nothing for the default table. */
    public static String rendered(String tablePrefix) {
        return tablePrefix.isEmpty() ? "" : tablePrefix + "_";
    }

    /** The table's name for a valid prefix. */
    public static String table(String tablePrefix) {
        return rendered(tablePrefix) + TABLE_BASE_NAME;
    }

    /** The per-queue table's name for a valid prefix. */
    public static String queues(String tablePrefix) {
        return rendered(tablePrefix) + QUEUES_BASE_NAME;
    }
}
