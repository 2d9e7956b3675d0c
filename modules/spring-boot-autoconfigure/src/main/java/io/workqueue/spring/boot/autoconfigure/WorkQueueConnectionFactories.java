package io.workqueue.spring.boot.autoconfigure;

import io.r2dbc.spi.ConnectionFactory;
import io.r2dbc.spi.Wrapped;
import java.util.Objects;

/**
 * The two connection factories the starter's queues run on: a pooled one for statements, and a
 * plain (unpooled) one for the notification listeners, which each hold one connection for as long
 * as the application runs. A LISTEN must never sit on a pooled connection: it would go back to the
 * pool still listening, and the pool would lose that connection for good.
 *
 * <p>By default both come from the application's R2DBC {@code ConnectionFactory} bean (Spring
 * Boot's pooled one): {@link #of} unwraps it. Declare a bean of this type to choose other factories.
 * Immutable and thread-safe.
 */
public final class WorkQueueConnectionFactories {
    private final ConnectionFactory statements;
    private final ConnectionFactory listener;

    private WorkQueueConnectionFactories(ConnectionFactory statements, ConnectionFactory listener) {
        this.statements = Objects.requireNonNull(statements, "statements");
        this.listener = Objects.requireNonNull(listener, "listener");
    }

    /**
     * Statements on {@code statements}, and the listeners on what it wraps: every
     * {@link Wrapped} layer (an r2dbc-pool {@code ConnectionPool}, a proxy) is peeled off until a
     * factory that opens its own connections remains. If {@code statements} wraps nothing, the
     * listeners use it as it is.
     */
    public static WorkQueueConnectionFactories of(ConnectionFactory statements) {
        return new WorkQueueConnectionFactories(statements, unwrapped(statements));
    }

    /** Statements on {@code statements}, listeners on {@code listener}, which must not be a pool. */
    public static WorkQueueConnectionFactories of(ConnectionFactory statements, ConnectionFactory listener) {
        return new WorkQueueConnectionFactories(statements, listener);
    }

    /** The factory every queue statement runs on; a pool, normally. */
    public ConnectionFactory statements() {
        return statements;
    }

    /** The factory each notification listener opens its one connection from; never a pool. */
    public ConnectionFactory listener() {
        return listener;
    }

    private static ConnectionFactory unwrapped(ConnectionFactory factory) {
        ConnectionFactory current = factory;
        // Bounded, in case a wrapper ever unwraps to itself.
        for (int depth = 0; depth < 16 && current instanceof Wrapped<?> wrapped
                && wrapped.unwrap() instanceof ConnectionFactory inner && inner != current; depth++) {
            current = inner;
        }
        return current;
    }
}
