package io.workqueue.postgres;

import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactory;
import io.r2dbc.spi.Result;
import io.workqueue.UnsupportedDialectException;
import io.workqueue.WorkQueueException;
import io.workqueue.internal.SqlStates;
import io.workqueue.internal.base.ConnectionAcquisition;
import io.workqueue.internal.base.TableNames;
import io.workqueue.migrations.WorkQueueMigrations;
import java.util.function.Function;
import org.reactivestreams.Publisher;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.util.retry.Retry;

/**
 * How the queue, the admin and the migrations run statements: one home for a connection's
 * lifecycle, cancellation on the server, the retries PostgreSQL asks for, and the message for a
 * table older than the release.
 *
 * <p>Each operation borrows a connection for its work and gives it back on completion and error;
 * on cancel (a subscriber leaving, a group commit's timeout) the statement in flight is cancelled
 * on the server and the connection closed rather than reused ({@link Connections#abandon}); after
 * an error saying it leads to a server that refuses writes it is discarded
 * ({@link Connections#discard}). The migrations reach it through the backend ({@link Schema}).
 * Public, though no other package uses it; the module does not export it. Thread-safe and immutable.
 */
public final class Database {
    private static final Logger log = LoggerFactory.getLogger(Database.class);

    private final ConnectionFactory connectionFactory;
    private final Scheduler timer;
    /** What the statements are for, in logs: "queue thumbnails", "table media_work_queue_items". */
    private final String subject;
    private final String tablePrefix;
    private final int writeAttempts;
    private final Runnable onRetry;
    /** Whether a failure that says the table is older than this release is reported as such. */
    private final boolean checksSchema;

    private Database(ConnectionFactory connectionFactory, Scheduler timer, String subject, String tablePrefix,
            int writeAttempts, Runnable onRetry, boolean checksSchema) {
        this.connectionFactory = connectionFactory;
        this.timer = timer;
        this.subject = subject;
        this.tablePrefix = tablePrefix;
        this.writeAttempts = writeAttempts;
        this.onRetry = onRetry;
        this.checksSchema = checksSchema;
    }

    /**
     * The runner of one queue's or admin's statements over the table of {@code tablePrefix}.
     *
     * @param subject       names them in logs ("queue thumbnails")
     * @param writeAttempts runs of a write that PostgreSQL asks to retry (40001, 40P01); at least 1
     * @param onRetry       told of each retry (a meter); must not throw
     */
    static Database of(ConnectionFactory connectionFactory, Scheduler timer, String subject, String tablePrefix,
            int writeAttempts, Runnable onRetry) {
        return new Database(connectionFactory, timer, subject, tablePrefix, writeAttempts, onRetry, true);
    }

    /**
     * The runner of the migrations' statements over the table of {@code tablePrefix}: no retries
     * (DDL is not retried), and no "older than this release" message, since bringing the table up
     * to date is what they do.
     */
    static Database forSchema(ConnectionFactory connectionFactory, String tablePrefix) {
        return new Database(connectionFactory, Schedulers.parallel(), "table " + TableNames.table(tablePrefix),
                tablePrefix, 1, () -> {}, false);
    }

    /**
     * Fails unless {@code connectionFactory} reports PostgreSQL. Pools report the metadata of the
     * factory they wrap, so one check covers both.
     *
     * @throws UnsupportedDialectException if it reports anything else
     */
    static void requirePostgres(ConnectionFactory connectionFactory) {
        String product = connectionFactory.getMetadata().getName();
        if (!"PostgreSQL".equalsIgnoreCase(product)) {
            throw new UnsupportedDialectException("reactive-workqueue runs on PostgreSQL only, but the connection"
                    + " factory reports " + product + " (" + connectionFactory.getClass().getName() + ")");
        }
    }

    /** Runs {@code work} on a connection of its own, as the class describes. */
    public <T> Mono<T> inConnection(Function<Connection, Mono<T>> work) {
        return Mono.usingWhen(ConnectionAcquisition.forUsingWhen(connectionFactory), work, Connection::close,
                        (connection, error) -> SqlStates.isMisdirected(error) ? Connections.discard(connection) : connection.close(),
                        this::abandon)
                .onErrorMap(this::outdatedSchema);
    }

    /**
     * Runs {@code work} in a transaction of its own on a connection of its own: committed when it
     * completes, rolled back when it fails (before the error goes on) and when it is cancelled, so
     * that no setting it made and no transaction it opened reaches the next borrower of a pooled
     * connection (or, behind a transaction-mode pooler, another client).
     */
    public <T> Mono<T> inTransaction(Function<Connection, Mono<T>> work) {
        return inConnection(connection -> Mono.usingWhen(Mono.from(connection.beginTransaction()).thenReturn(connection),
                work,
                Connection::commitTransaction,
                (c, error) -> Mono.from(c.rollbackTransaction()).onErrorResume(e -> Mono.empty()),
                c -> Mono.from(c.rollbackTransaction()).onErrorResume(e -> Mono.empty())));
    }

    /** Runs a write again, on a fresh connection, only when PostgreSQL asks for it (40001, 40P01). */
    <T> Mono<T> withRetries(Mono<T> write) {
        if (writeAttempts <= 1) {
            return write;
        }
        return write.retryWhen(Retry.max(writeAttempts - 1L)
                .filter(SqlStates::isWriteRetryable)
                .doBeforeRetry(signal -> onRetry.run())
                .doBeforeRetry(signal -> log.warn("write on {} hit SQLSTATE {}; retrying (attempt {} of {})",
                        subject, SqlStates.sqlState(signal.failure()), signal.totalRetries() + 2, writeAttempts))
                .onRetryExhaustedThrow((spec, signal) -> signal.failure()));
    }

    /** How many rows a statement changed, summed over its results. */
    public static Mono<Long> rowsUpdated(Publisher<? extends Result> results) {
        return Flux.from(results)
                .concatMap(Result::getRowsUpdated)
                .reduce(0L, Long::sum);
    }

    /** {@link #rowsUpdated(Publisher)} of a bound statement. */
    static Mono<Long> rowsUpdated(SqlStatement.Bound statement) {
        return rowsUpdated(statement.execute());
    }

    /**
     * A statement that names a column this release added, run against a table an earlier release
     * created, fails with "column ... does not exist" (42703), and one that names the per-queue
     * table (version 3) with 42P01: say what to do instead.
     */
    Throwable outdatedSchema(Throwable error) {
        if (!checksSchema) {
            return error;
        }
        String state = SqlStates.sqlState(error);
        if (SqlStates.UNDEFINED_COLUMN.equals(state) || (SqlStates.UNDEFINED_TABLE.equals(state)
                && String.valueOf(error.getMessage()).contains(TableNames.queues(tablePrefix)))) {
            return new WorkQueueException("table " + TableNames.table(tablePrefix) + " is older than this release's"
                    + " schema (version " + WorkQueueMigrations.SCHEMA_VERSION + "): upgrade it in place with"
                    + " WorkQueueMigrations.apply(...), or apply the versioned scripts from"
                    + " WorkQueueMigrations.versionedScript(...); " + error.getMessage(), error);
        }
        return error;
    }

    private Mono<Void> abandon(Connection connection) {
        return Connections.abandon(connection, timer, subject);
    }
}
