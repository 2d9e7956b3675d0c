package io.workqueue.postgres;

import io.workqueue.internal.base.TableNames;

/**
 * The statements of {@link PostgresWorkQueueAdmin}, rendered once per table from
 * {@code io/workqueue/postgres/sql/admin.sql}: they read every logical queue of the table, and
 * each state they list is the predicate the queue itself uses, never a second spelling of it.
 * Immutable.
 */
final class InspectionSql {
    final String table;
    /** The queue's own stats read (its two statements), for a queue the admin has no queue instance of. */
    final SqlStatement statsCompleted;
    final SqlStatement stats;
    final SqlStatement queueNames;
    final SqlStatement item;
    final SqlStatement readyPage;
    final SqlStatement delayedPage;
    final SqlStatement leasedPage;
    final SqlStatement stalledPage;
    final SqlStatement completedPage;
    final SqlStatement retryKeys;
    /** The queue's own remove, whose deleted keys the admin lists. */
    final SqlStatement removeKeys;
    final SqlStatement purgeCompleted;
    final SqlStatement pause;
    final SqlStatement resume;

    InspectionSql(String tablePrefix) {
        this.table = TableNames.table(tablePrefix);
        this.statsCompleted = Sql.render(tablePrefix, "statsCompleted");
        this.stats = Sql.render(tablePrefix, "stats");
        this.queueNames = Sql.render(tablePrefix, "admin.queueNames");
        this.item = Sql.render(tablePrefix, "admin.item");
        this.readyPage = Sql.render(tablePrefix, "admin.readyPage");
        this.delayedPage = Sql.render(tablePrefix, "admin.delayedPage");
        this.leasedPage = Sql.render(tablePrefix, "admin.leasedPage");
        this.stalledPage = Sql.render(tablePrefix, "admin.stalledPage");
        this.completedPage = Sql.render(tablePrefix, "admin.completedPage");
        this.retryKeys = Sql.render(tablePrefix, "admin.retryKeys");
        this.removeKeys = Sql.render(tablePrefix, "removeKeys");
        this.purgeCompleted = Sql.render(tablePrefix, "admin.purgeCompleted");
        this.pause = Sql.render(tablePrefix, "admin.pause");
        this.resume = Sql.render(tablePrefix, "admin.resume");
    }
}
