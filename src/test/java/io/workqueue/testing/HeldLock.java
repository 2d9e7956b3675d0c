package io.workqueue.testing;

import io.r2dbc.spi.Connection;
import java.time.Duration;
import java.util.function.Function;
import reactor.core.publisher.Mono;

/**
 * Another transaction, on its own (non-pooled) connection, holding locks until released: the
 * shared part of {@link RowLock} and {@link TableLock}, which differ only in what they lock.
 */
public abstract class HeldLock implements AutoCloseable {
    static final Duration TIMEOUT = Duration.ofSeconds(30);

    private final Connection connection;
    private final int pid;
    private final long heldSince = System.nanoTime();
    private boolean released;
    private long releasedAt;

    HeldLock(Connection connection, int pid) {
        this.connection = connection;
        this.pid = pid;
    }

    /**
     * Opens a connection, begins a transaction, runs {@code lock} in it and wraps the result; the
     * connection is closed if anything fails.
     */
    static <L extends HeldLock> L open(Function<Connection, Mono<?>> lock, LockFactory<L> wrap) {
        Connection connection = Mono.from(TestDatabase.plain().create()).block(TIMEOUT);
        try {
            int pid = Mono.from(connection.createStatement("SELECT pg_backend_pid()").execute())
                    .flatMap(r -> Mono.from(r.map((row, meta) -> row.get(0, Integer.class))))
                    .block(TIMEOUT);
            Mono.from(connection.beginTransaction()).block(TIMEOUT);
            lock.apply(connection).block(TIMEOUT);
            return wrap.wrap(connection, pid);
        } catch (RuntimeException e) {
            Mono.from(connection.close()).block(TIMEOUT);
            throw e;
        }
    }

    /** Builds the concrete lock around its connection. */
    interface LockFactory<L> {
        L wrap(Connection connection, int pid);
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

    /** How long the locks have been held (until now, or until they were released). */
    public Duration held() {
        return Duration.ofNanos((released ? releasedAt : System.nanoTime()) - heldSince);
    }

    /** Rolls the transaction back, dropping the locks, and closes the connection. Idempotent. */
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
