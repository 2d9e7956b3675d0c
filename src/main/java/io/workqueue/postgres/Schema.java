package io.workqueue.postgres;

import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactory;
import io.workqueue.internal.base.TableNames;
import java.util.List;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * How {@link io.workqueue.migrations.WorkQueueMigrations} reads and applies a table's schema, on the
 * statement runner the queue and the admin use ({@link Database}). What that buys the migrations is
 * the cancel on the server: {@code apply} under a start-up timeout that fires while its DDL waits
 * for a lock (another session's open transaction on the table, another service's apply) would
 * otherwise leave that DDL queued on the server for the table's lock, where every claim and
 * enqueue of the fleet queues behind it until the lock it waits for is released. Stateless.
 */
final class Schema {
    /** The comment that records the version, before the number. */
    static final String VERSION_COMMENT = "reactive-workqueue schema ";

    private Schema() {}

    /** The version of the table of {@code tablePrefix}: 0 without the table, 1 without a record. */
    static Mono<Integer> version(ConnectionFactory connectionFactory, String tablePrefix) {
        // Named here, on the subscribing thread: the first use of Sql reads the SQL files, which
        // must not happen on the driver's thread the statements answer on.
        SqlStatement read = Sql.SCHEMA_VERSION;
        return Database.forSchema(connectionFactory, tablePrefix)
                .inConnection(connection -> version(read, connection, TableNames.table(tablePrefix)));
    }

    /**
     * Runs {@code statements} in one transaction, under the advisory lock named for the table,
     * unless the table is at {@code target} or later: DDL takes the table's lock even when
     * {@code IF NOT EXISTS} finds nothing to do, so a current table is not touched (not even
     * locked).
     */
    static Mono<Void> apply(ConnectionFactory connectionFactory, String tablePrefix, List<String> statements,
            int target) {
        String table = TableNames.table(tablePrefix);
        SqlStatement lock = Sql.SCHEMA_LOCK; // as in version(...)
        SqlStatement read = Sql.SCHEMA_VERSION;
        return Database.forSchema(connectionFactory, tablePrefix).inTransaction(connection ->
                Database.rowsUpdated(lock.on(connection).bind("lock", VERSION_COMMENT + table).execute())
                        .then(version(read, connection, table))
                        .flatMapMany(version -> version >= target ? Flux.<Long>empty()
                                : Flux.fromIterable(statements)
                                        .concatMap(sql -> Database.rowsUpdated(connection.createStatement(sql).execute())))
                        .then());
    }

    private static Mono<Integer> version(SqlStatement read, Connection connection, String table) {
        return Flux.from(read.on(connection).bind("table", table).execute())
                .concatMap(result -> result.map((row, meta) -> {
                    if (!Boolean.TRUE.equals(row.get("present", Boolean.class))) {
                        return 0;
                    }
                    String comment = row.get("comment", String.class);
                    if (comment != null && comment.startsWith(VERSION_COMMENT)) {
                        try {
                            return Integer.parseInt(comment.substring(VERSION_COMMENT.length()).strip());
                        } catch (NumberFormatException e) {
                            return 1;
                        }
                    }
                    return 1;
                }))
                .single();
    }
}
