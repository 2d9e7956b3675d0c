package io.workqueue.testing;

import io.r2dbc.spi.Connection;
import reactor.core.publisher.Flux;

/**
 * Another transaction, on its own (non-pooled) connection, holding a whole table in
 * {@code ACCESS EXCLUSIVE} mode until released: what DDL or a stray {@code LOCK TABLE} does to a
 * live queue. Every statement on the table, reads included, waits behind it.
 */
public final class TableLock extends HeldLock {
    private TableLock(Connection connection, int pid) {
        super(connection, pid);
    }

    /** Begins a transaction and locks {@code table}; returns once the lock is held. */
    public static TableLock hold(String table) {
        return open(connection -> Flux.from(connection.createStatement(
                                "LOCK TABLE " + table + " IN ACCESS EXCLUSIVE MODE").execute())
                        .concatMap(r -> r.getRowsUpdated())
                        .then(),
                TableLock::new);
    }
}
