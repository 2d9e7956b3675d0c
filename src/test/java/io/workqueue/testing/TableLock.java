package io.workqueue.testing;

import io.r2dbc.spi.Connection;
import java.time.Duration;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Another transaction, on its own (non-pooled) connection, holding a whole table in
 * {@code ACCESS EXCLUSIVE} mode until released: what DDL or a stray {@code LOCK TABLE} does to a
 * live queue. Every statement on the table, reads included, waits behind it.
 */
public final class TableLock implements AutoCloseable {
    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    private final Connection connection;
    private final int pid;
    private final long heldSince = System.nanoTime();
    private boolean released;
    private long releasedAt;

    private TableLock(Connection connection, int pid) {
        this.connection = connection;
        this.pid = pid;
    }

    /** Begins a transaction and locks {@code table}; returns once the lock is held. */
    public static TableLock hold(String table) {
        Connection connection = Mono.from(TestDatabase.plain().create()).block(TIMEOUT);
        try {
            int pid = Mono.from(connection.createStatement("SELECT pg_backend_pid()").execute())
                    .flatMap(r -> Mono.from(r.map((row, meta) -> row.get(0, Integer.class))))
                    .block(TIMEOUT);
            Mono.from(connection.beginTransaction()).block(TIMEOUT);
            Flux.from(connection.createStatement("LOCK TABLE " + table + " IN ACCESS EXCLUSIVE MODE").execute())
                    .concatMap(r -> r.getRowsUpdated())
                    .blockLast(TIMEOUT);
            return new TableLock(connection, pid);
        } catch (RuntimeException e) {
            Mono.from(connection.close()).block(TIMEOUT);
            throw e;
        }
    }

    /** Waits until at least {@code n} backends are blocked behind the lock. */
    public void awaitWaiters(int n) {
        Poll.until(Duration.ofSeconds(20), n + " backend(s) blocked by pid " + pid, () -> TestDatabase.queryLong(
                "SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))", pid) >= n);
    }

    /** How long the lock has been held (until now, or until it was released). */
    public Duration held() {
        return Duration.ofNanos((released ? releasedAt : System.nanoTime()) - heldSince);
    }

    /** Rolls the transaction back, dropping the lock, and closes the connection. Idempotent. */
    public void release() {
        if (released) {
            return;
        }
        released = true;
        releasedAt = System.nanoTime();
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
