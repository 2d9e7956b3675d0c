package io.workqueue.internal;

import io.r2dbc.spi.R2dbcException;
import io.r2dbc.spi.R2dbcNonTransientResourceException;
import io.r2dbc.spi.R2dbcTimeoutException;
import io.r2dbc.spi.R2dbcTransientResourceException;
import io.workqueue.WriteTimeoutException;
import java.io.IOException;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;

/**
 * Classifies database failures by SQLSTATE, the only classification that is stable across driver
 * versions (the driver's exception classes are not: a deadlock and a serialization failure arrive
 * as different types).
 */
public final class SqlStates {
    /** {@code serialization_failure}. */
    public static final String SERIALIZATION_FAILURE = "40001";
    /** {@code deadlock_detected}. */
    public static final String DEADLOCK_DETECTED = "40P01";
    /** A statement named a column the table lacks: a table from an older schema version. */
    public static final String UNDEFINED_COLUMN = "42703";
    /** A table that does not exist: the per-queue table of a schema older than version 3. */
    public static final String UNDEFINED_TABLE = "42P01";
    /**
     * {@code read_only_sql_transaction}: a write reached a server that accepts no writes, a hot
     * standby (the old primary back after a failover, reached through an address that still names
     * it).
     */
    public static final String READ_ONLY_SQL_TRANSACTION = "25006";

    /** {@code lock_not_available}: a lock was not granted within {@code lock_timeout}. */
    public static final String LOCK_NOT_AVAILABLE = "55P03";

    /**
     * {@code too_many_connections}: the server (or the role's or database's connection limit) has no
     * slot for a new connection now, as when every client of a promoted primary reconnects at once.
     */
    public static final String TOO_MANY_CONNECTIONS = "53300";

    /** Server going away under us: admin shutdown, crash shutdown, cannot connect now. */
    private static final Set<String> SERVER_GONE = Set.of("57P01", "57P02", "57P03");

    /**
     * Reactor Netty's error for a write on a connection that has closed, named rather than imported
     * so the module needs no Reactor Netty of its own: it is no {@link IOException}, and it reaches a
     * caller bare, without the driver's SQLSTATE, when the closing is not the driver's own (a pool
     * closing a dead connection, which says goodbye to a server that is already gone).
     */
    private static final String ABORTED = "reactor.netty.channel.AbortedException";

    /** Where the I/O failures of a connection come from (a plain {@code java.io.IOException} too). */
    private static final List<String> TRANSPORT_PACKAGES = List.of(
            "java.io.IOException", "java.net.", "java.nio.channels.", "io.netty.", "reactor.netty.", "io.r2dbc.");

    private SqlStates() {}

    /** The SQLSTATE of the first {@link R2dbcException} in {@code error}'s cause chain, if any. */
    public static @Nullable String sqlState(Throwable error) {
        for (Throwable t = error; t != null; t = t.getCause()) {
            if (t instanceof R2dbcException r2dbc && r2dbc.getSqlState() != null) {
                return r2dbc.getSqlState();
            }
            if (t.getCause() == t) {
                break;
            }
        }
        return null;
    }

    /**
     * Whether the connection {@code error} came from leads somewhere it should not stay: to a server
     * that refuses writes ({@value #READ_ONLY_SQL_TRANSACTION}). Such a connection is healthy as
     * far as a pool can tell ({@code SELECT 1} works), so handed back it would be handed out again,
     * and every write on it refused, for as long as it lives.
     */
    public static boolean isMisdirected(Throwable error) {
        return READ_ONLY_SQL_TRANSACTION.equals(sqlState(error));
    }

    /** Whether a write should run again: PostgreSQL asked for it (40001, 40P01), nothing else. */
    public static boolean isWriteRetryable(Throwable error) {
        String state = sqlState(error);
        return SERIALIZATION_FAILURE.equals(state) || DEADLOCK_DETECTED.equals(state);
    }

    /**
     * Whether a long-running loop (a claim stream, a worker) should back off and carry on:
     * <ul>
     *   <li>a retryable write (40001, 40P01);
     *   <li>a lost connection: SQLSTATE class 08, the server shutting down, or an I/O failure
     *       raised by the driver or the network stack, Reactor Netty's {@code AbortedException}
     *       for a write on a closed connection included;
     *   <li>a connection that failed as a resource without the server saying so: an
     *       {@link R2dbcNonTransientResourceException} with no SQLSTATE. Every error the server
     *       sends carries one, so this is the client's verdict on one connection, such as
     *       r2dbc-pool's "Connection validation failed" when an acquisition meets only the dead
     *       connections it kept idle after the server went; the next connection is a new one;
     *   <li>no free connection slot on the server ({@value #TOO_MANY_CONNECTIONS}), as when every
     *       client of a promoted primary reconnects at once;
     *   <li>no connection in time: a pool's acquisition or validation timing out (an
     *       {@link R2dbcTimeoutException} without a SQLSTATE, or a bare {@link TimeoutException}),
     *       as when the network to the database is cut;
     *   <li>a round of the loop that had no answer within its bound ({@link RoundTimeoutException}:
     *       a half-open connection);
     *   <li>a server that refuses writes ({@value #READ_ONLY_SQL_TRANSACTION}: a standby, such as
     *       the old primary back after a failover, reached through an address that still names it;
     *       the queue closes that connection, so the next one may reach the primary);
     *   <li>a group-committed write whose commit was not confirmed in time
     *       ({@link WriteTimeoutException}: enqueues and completes are idempotent, so running them
     *       again is safe).
     * </ul>
     *
     * <p>Nothing else is transient. In particular an {@link IOException} thrown by user code — a
     * key codec whose JSON no longer matches the type, say — is a bug to report, not an outage to
     * ride out: retrying it would only repeat it.
     */
    public static boolean isTransient(Throwable error) {
        if (isWriteRetryable(error)) {
            return true;
        }
        String state = sqlState(error);
        if (state != null && (state.startsWith("08") || SERVER_GONE.contains(state)
                || READ_ONLY_SQL_TRANSACTION.equals(state) || TOO_MANY_CONNECTIONS.equals(state))) {
            return true;
        }
        for (Throwable t = error; t != null; t = t.getCause()) {
            if (t instanceof WriteTimeoutException || t instanceof RoundTimeoutException
                    || t instanceof R2dbcTransientResourceException
                    || (t instanceof R2dbcTimeoutException timeout && timeout.getSqlState() == null)
                    || (t instanceof R2dbcNonTransientResourceException resource && resource.getSqlState() == null)
                    || t instanceof TimeoutException
                    || (t instanceof IOException && raisedByTransport(t))
                    || isA(t, ABORTED)) {
                return true;
            }
            if (t.getCause() == t) {
                break;
            }
        }
        return false;
    }

    /** Whether {@code error} is of the class named {@code type} or a subclass of it. */
    private static boolean isA(Throwable error, String type) {
        for (Class<?> c = error.getClass(); c != null; c = c.getSuperclass()) {
            if (c.getName().equals(type)) {
                return true;
            }
        }
        return false;
    }

    /** Whether an I/O failure comes from the JDK's network classes, Netty, Reactor Netty or R2DBC. */
    private static boolean raisedByTransport(Throwable ioFailure) {
        String type = ioFailure.getClass().getName();
        for (String origin : TRANSPORT_PACKAGES) {
            if (type.startsWith(origin)) {
                return true;
            }
        }
        return false;
    }
}
