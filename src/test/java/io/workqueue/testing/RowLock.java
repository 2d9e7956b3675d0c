package io.workqueue.testing;

import io.r2dbc.spi.Connection;
import java.time.Duration;
import java.util.List;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Another transaction, on its own (non-pooled) connection, holding row locks on some keys of a
 * queue until released. Used to park a writer deterministically (it queues behind the lock) and to
 * play the concurrent claimer whose rows a {@code SKIP LOCKED} claim must pass over.
 */
public final class RowLock implements AutoCloseable {
    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    private final Connection connection;
    private final int pid;
    private boolean released;

    private RowLock(Connection connection, int pid) {
        this.connection = connection;
        this.pid = pid;
    }

    /**
     * Begins a transaction and takes {@code FOR UPDATE} locks on the rows of {@code keys} in
     * {@code queue}; returns once they are held. Fails if any of the rows does not exist.
     */
    public static RowLock hold(String table, String queue, String... keys) {
        Connection connection = Mono.from(TestDatabase.plain().create()).block(TIMEOUT);
        try {
            int pid = Mono.from(connection.createStatement("SELECT pg_backend_pid()").execute())
                    .flatMap(r -> Mono.from(r.map((row, meta) -> row.get(0, Integer.class))))
                    .block(TIMEOUT);
            Mono.from(connection.beginTransaction()).block(TIMEOUT);
            List<String> locked = Flux.from(connection.createStatement(
                                    "SELECT item_key FROM " + table
                                            + " WHERE queue_name = $1 AND item_key = ANY($2) ORDER BY item_key FOR UPDATE")
                            .bind(0, queue)
                            .bind(1, keys)
                            .execute())
                    .concatMap(r -> r.map((row, meta) -> row.get(0, String.class)))
                    .collectList()
                    .block(TIMEOUT);
            if (locked.size() != keys.length) {
                throw new IllegalStateException("expected to lock " + List.of(keys) + " but found rows " + locked);
            }
            return new RowLock(connection, pid);
        } catch (RuntimeException e) {
            Mono.from(connection.close()).block(TIMEOUT);
            throw e;
        }
    }

    /** The backend process id of the holding connection. */
    public int pid() {
        return pid;
    }

    /** How many other backends are waiting on a lock this transaction holds. */
    public long waiters() {
        return TestDatabase.queryLong(
                "SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))", pid);
    }

    /** Waits until at least {@code n} backends are blocked behind this transaction's locks. */
    public void awaitWaiters(int n) {
        Poll.until(Duration.ofSeconds(20), n + " backend(s) blocked by pid " + pid, () -> waiters() >= n);
    }

    /** Rolls the transaction back, dropping the locks, and closes the connection. Idempotent. */
    public void release() {
        if (released) {
            return;
        }
        released = true;
        Mono.from(connection.rollbackTransaction())
                .onErrorResume(e -> Mono.empty())
                .then(Mono.from(connection.close()))
                .block(TIMEOUT);
    }

    @Override
    public void close() {
        release();
    }
}
