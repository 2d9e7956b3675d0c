package io.workqueue.postgres;

import io.workqueue.Stats;
import io.workqueue.WorkQueueConfig;
import io.workqueue.internal.base.TableNames;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The statements a queue instance runs, rendered once for its table from the SQL files
 * ({@link SqlTemplates}), with the variant its configuration names (completing marks rows, or
 * deletes them when the queue deletes on complete). What each statement does, returns and why is
 * written beside its SQL, in {@code io/workqueue/postgres/sql/}; {@code docs/sql/statements.sql}
 * prints them all. Immutable.
 */
final class Sql {
    /** A claimed row had no lease before: never leased, released, or completed and enqueued again. */
    static final int PRIOR_LEASE_NONE = 0;
    /** A claimed row's lease had lapsed: the claim is a reclaim. */
    static final int PRIOR_LEASE_LAPSED = 1;
    /** A claimed row was handed back by a complete to run once more. */
    static final int PRIOR_LEASE_HANDED_BACK = 2;

    /**
     * Where the claim, the stats read and the admin's statements number the two parameters every
     * predicate names: {@code $1} the queue, {@code $2} the attempt limit (SqlTemplatesTest checks
     * that every statement using a predicate numbers them so).
     */
    static final Map<String, Integer> PREDICATE_POSITIONS = Map.of("queue", 1, "attempt_limit", 2);

    /** The shared predicates, as every statement that uses them renders them; for checks and benchmarks. */
    static final String DUE = predicate("due");
    static final String DELAYED = predicate("delayed");
    static final String LEASED = predicate("leased");
    static final String STALLED = predicate("stalled");
    static final String COMPLETED = predicate("completed");
    static final String READY_SINCE = predicate("ready_since");

    /** Statements that name no table: static. */
    static final SqlStatement HORIZON = render("", "horizon");
    static final SqlStatement NOTIFIER_TICK = render("", "notifierTick");
    static final SqlStatement LOOK_SETTINGS = render("", "lookSettings");
    static final SqlStatement SCHEMA_VERSION = render("", "schemaVersion");
    static final SqlStatement SCHEMA_LOCK = render("", "schemaLock");

    final String table;
    final String queuesTable;
    final SqlStatement enqueue;
    final SqlStatement enqueueInTransaction;
    final SqlStatement enqueueNotifying;
    final SqlStatement enqueueTraced;
    final SqlStatement enqueueInTransactionTraced;
    final SqlStatement enqueueNotifyingTraced;
    final SqlStatement claimDue;
    final SqlStatement claimFromCursors;
    final SqlStatement completeKeys;
    final SqlStatement completeAndClaim;
    final SqlStatement completeAndClaimFromCursors;
    final SqlStatement lookBehindCursors;
    final SqlStatement releaseKeys;
    final SqlStatement handBackKeys;
    final SqlStatement extendKeys;
    final SqlStatement snoozeKeys;
    final SqlStatement removeKeys;
    final SqlStatement reapCompleted;
    final SqlStatement statsCompleted;
    final SqlStatement stats;
    final SqlStatement readyLongerThan;
    final SqlStatement keepHouse;
    final SqlStatement publishReading;

    /**
     * @param tablePrefix      the validated prefix of the one table every statement names
     * @param deleteOnComplete whether completing deletes rows rather than marking them completed
     */
    Sql(String tablePrefix, boolean deleteOnComplete) {
        this.table = TableNames.table(tablePrefix);
        this.queuesTable = TableNames.queues(tablePrefix);
        String deleting = deleteOnComplete ? "Deleting" : "";
        this.enqueue = render(tablePrefix, "enqueue");
        this.enqueueInTransaction = render(tablePrefix, "enqueueInTransaction");
        this.enqueueNotifying = render(tablePrefix, "enqueueNotifying");
        this.enqueueTraced = render(tablePrefix, "enqueueTraced");
        this.enqueueInTransactionTraced = render(tablePrefix, "enqueueInTransactionTraced");
        this.enqueueNotifyingTraced = render(tablePrefix, "enqueueNotifyingTraced");
        this.claimDue = render(tablePrefix, "claimDue");
        this.claimFromCursors = render(tablePrefix, "claimFromCursors");
        this.completeKeys = render(tablePrefix, "completeKeys" + deleting);
        this.completeAndClaim = render(tablePrefix, "completeAndClaim" + deleting);
        this.completeAndClaimFromCursors = render(tablePrefix, "completeAndClaimFromCursors" + deleting);
        this.lookBehindCursors = render(tablePrefix, "lookBehindCursors");
        this.releaseKeys = render(tablePrefix, "releaseKeys");
        this.handBackKeys = render(tablePrefix, "handBackKeys");
        this.extendKeys = render(tablePrefix, "extendKeys");
        this.snoozeKeys = render(tablePrefix, "snoozeKeys");
        this.removeKeys = render(tablePrefix, "removeKeys");
        this.reapCompleted = render(tablePrefix, "reapCompleted");
        this.statsCompleted = render(tablePrefix, "statsCompleted");
        this.stats = render(tablePrefix, "stats");
        this.readyLongerThan = render(tablePrefix, "readyLongerThan");
        this.keepHouse = render(tablePrefix, "keepHouse");
        this.publishReading = render(tablePrefix, "publishReading");
    }

    /** Statement {@code name} of the SQL files, rendered for the table of {@code tablePrefix}. */
    static SqlStatement render(String tablePrefix, String name) {
        SqlTemplates.Rendered rendered = SqlTemplates.library().render(name, constants(tablePrefix));
        return new SqlStatement(name, compact(rendered.readable()),
                rendered.parameters().stream().map(SqlTemplates.Parameter::name).toList(), rendered.fragments());
    }

    /** What the files' {@code {{...}}} placeholders that are not fragments stand for. */
    static Map<String, String> constants(String tablePrefix) {
        Map<String, String> constants = new LinkedHashMap<>();
        constants.put("table", TableNames.table(tablePrefix));
        constants.put("queues_table", TableNames.queues(tablePrefix));
        constants.put("completed_count_cap", Long.toString(Stats.COMPLETED_COUNT_LIMIT + 1));
        constants.put("prior_lease_none", Integer.toString(PRIOR_LEASE_NONE));
        constants.put("prior_lease_lapsed", Integer.toString(PRIOR_LEASE_LAPSED));
        constants.put("prior_lease_handed_back", Integer.toString(PRIOR_LEASE_HANDED_BACK));
        constants.put("max_trace_contexts", Integer.toString(WorkQueueConfig.MAX_TRACE_CONTEXTS));
        return constants;
    }

    private static String predicate(String fragment) {
        return SqlTemplates.library().fragment(fragment, constants(""), PREDICATE_POSITIONS);
    }

    /**
     * Every statement of the SQL files, for the default table, as written: comments kept,
     * parameters named in each header. Committed as {@code docs/sql/statements.sql}
     * (StatementsReferenceTest keeps it current), so the final text of every statement can be read
     * in one place.
     */
    static String reference() {
        StringBuilder out = new StringBuilder("""
                -- Every statement reactive-workqueue runs, rendered for the default table
                -- (work_queue_items) from the files in src/main/resources/io/workqueue/postgres/sql/:
                -- the comments say why; the driver receives the text without them. Generated by
                -- Sql.reference(); StatementsReferenceTest fails when this file is out of date
                -- (regenerate: mvn test -Dtest=StatementsReferenceTest -Dstatements.write=true).

                """);
        SqlTemplates templates = SqlTemplates.library();
        for (String name : templates.statementNames()) {
            String readable = templates.render(name, constants("")).readable();
            out.append(readable.stripTrailing()).append(";\n\n");
        }
        return out.toString();
    }

    /**
     * The statement as sent: comments and blank lines dropped. The comments are for readers of the
     * SQL files; the driver tokenizes every statement's text each time it is created, so they would
     * cost on every claim and complete.
     */
    static String compact(String statement) {
        StringBuilder compact = new StringBuilder(statement.length());
        for (String line : statement.split("\n")) {
            int comment = line.indexOf("--");
            String code = (comment < 0 ? line : line.substring(0, comment)).stripTrailing();
            if (!code.isBlank()) {
                compact.append(code).append('\n');
            }
        }
        return compact.toString();
    }
}
