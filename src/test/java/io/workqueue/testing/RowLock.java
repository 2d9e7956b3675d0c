package io.workqueue.testing;

import io.r2dbc.spi.Connection;
import java.util.List;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Another transaction, on its own (non-pooled) connection, holding row locks on some keys of a
 * queue until released. Used to park a writer deterministically (it queues behind the lock) and to
 * play the concurrent claimer whose rows a {@code SKIP LOCKED} claim must pass over.
 */
public final class RowLock extends HeldLock {
    private RowLock(Connection connection, int pid) {
        super(connection, pid);
    }

    /**
     * Begins a transaction and takes {@code FOR UPDATE} locks on the rows of {@code keys} in
     * {@code queue}; returns once they are held. Fails if any of the rows does not exist.
     */
    public static RowLock hold(String table, String queue, String... keys) {
        return open(connection -> Flux.from(connection.createStatement(
                                "SELECT item_key FROM " + table
                                        + " WHERE queue_name = $1 AND item_key = ANY($2) ORDER BY item_key FOR UPDATE")
                        .bind(0, queue)
                        .bind(1, keys)
                        .execute())
                .concatMap(r -> r.map((row, meta) -> row.get(0, String.class)))
                .collectList()
                .flatMap(locked -> locked.size() == keys.length
                        ? Mono.just(locked)
                        : Mono.error(new IllegalStateException(
                                "expected to lock " + List.of(keys) + " but found rows " + locked))),
                RowLock::new);
    }
}
