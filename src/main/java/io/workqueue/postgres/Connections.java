package io.workqueue.postgres;

import io.r2dbc.postgresql.api.PostgresqlConnection;
import io.r2dbc.spi.Connection;
import io.r2dbc.spi.Wrapped;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/** How the queue and the admin give back a connection they cannot simply return: one home for both. */
final class Connections {
    private static final Logger log = LoggerFactory.getLogger(Connections.class);
    /** Bound on sending a cancel request, so that abandoning a connection cannot itself hang. */
    private static final Duration CANCEL_TIMEOUT = Duration.ofSeconds(5);

    private Connections() {}

    /**
     * Gives back a connection whose operation was cancelled mid-statement. Cancelling a subscription
     * stops only the client: the statement would go on running on the server (waiting on a lock,
     * say), still holding its connection, and a timed-out enqueue would still commit after its
     * callers were told it failed; a read cancelled inside its own short transaction would hand the
     * next borrower a connection still in it. So the statement is cancelled on the server, and the
     * connection is closed rather than reused, because a cancel request lands asynchronously and
     * must not hit whatever statement the next borrower runs; a pool sees the connection closed
     * when it validates it and replaces it.
     */
    static Mono<Void> abandon(Connection connection, Scheduler timer, String queue) {
        if (!(physical(connection) instanceof PostgresqlConnection postgres)) {
            return Mono.from(connection.close());
        }
        Mono<Void> cancel = postgres.cancelRequest()
                .timeout(CANCEL_TIMEOUT, timer)
                .onErrorResume(e -> {
                    log.debug("cancel request for an abandoned statement on queue {} failed", queue, e);
                    return Mono.empty();
                });
        return cancel.then(discard(connection));
    }

    /**
     * Closes the physical connection under {@code connection}, then gives {@code connection} back:
     * a pool finds it closed when it validates it, and replaces it, so it is never handed out
     * again. For a connection to a server that refuses writes (a standby reached through an address
     * that still names it after a failover): the pool would think it healthy, and the next one may
     * reach the primary.
     */
    static Mono<Void> discard(Connection connection) {
        Connection physical = physical(connection);
        Mono<Void> closePhysical = Mono.from(physical.close()).onErrorResume(e -> Mono.empty());
        return physical == connection ? closePhysical : closePhysical.then(Mono.from(connection.close()));
    }

    /** The driver's connection under whatever wraps it (a pool's), or the innermost one found. */
    private static Connection physical(Connection connection) {
        Connection physical = connection;
        while (!(physical instanceof PostgresqlConnection) && physical instanceof Wrapped<?> wrapped
                && wrapped.unwrap() instanceof Connection inner && inner != physical) {
            physical = inner;
        }
        return physical;
    }
}
