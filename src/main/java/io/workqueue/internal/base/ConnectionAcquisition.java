package io.workqueue.internal.base;

import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactory;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Subscription;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Operators;
import reactor.util.context.Context;

/**
 * Borrows a connection so that a cancel which comes after the connection was handed over never
 * reaches the pool. Every borrow in the library goes through here.
 *
 * <p>Why: r2dbc-pool (1.0.2) gives a connection back to its pool when the subscription to
 * {@code create()} is cancelled before its publisher completed, even if the connection has
 * already been emitted. A cancel that races the emission (a {@code timeout} firing on another
 * thread as the connection arrives, or any operator that cancels upstream on its first value, as
 * {@code next()} does) therefore puts a connection back in the pool that its borrower goes on
 * using: the next borrower then runs inside the first one's transaction, and the first one's
 * clean-up (closing the connection it abandons) closes it under the second. Observed as a
 * cancelled stats read leaving {@code BEGIN} open for the next borrower.
 *
 * <p>Here a cancel reaches the factory only while nothing has been handed over; after that, the
 * connection is the subscriber's to give back. A connection that arrives after the subscriber
 * cancelled is given back at once, unused. So the subscriber must be one that never drops a
 * connection it was handed: a {@code usingWhen}'s resource subscriber, which cleans up even a
 * resource that arrives after its cancel, and nothing in between (a {@code timeout} there could
 * drop a connection that raced its cancel, and nobody would give it back). Thread-safe; adds no
 * round trip.
 */
public final class ConnectionAcquisition {
    private static final Logger log = LoggerFactory.getLogger(ConnectionAcquisition.class);

    private ConnectionAcquisition() {}

    /**
     * A cold {@code Mono} borrowing one connection from {@code factory} per subscription, as above:
     * only for the resource of a {@code Mono.usingWhen} or {@code Flux.usingWhen}, subscribed by it
     * directly.
     */
    public static Mono<Connection> forUsingWhen(ConnectionFactory factory) {
        return Mono.fromDirect(subscriber -> Mono.from(factory.create())
                .subscribe(new Handover(Operators.toCoreSubscriber(subscriber))));
    }

    /** Passes the factory's one connection on; decides where a cancel goes by whether it was. */
    private static final class Handover implements CoreSubscriber<Connection>, Subscription {
        private static final int WAITING = 0;
        private static final int HANDED_OVER = 1;
        private static final int CANCELLED = 2;

        private final CoreSubscriber<? super Connection> actual;
        private final AtomicInteger state = new AtomicInteger(WAITING);
        private @Nullable Subscription upstream;

        Handover(CoreSubscriber<? super Connection> actual) {
            this.actual = actual;
        }

        @Override
        public Context currentContext() {
            return actual.currentContext();
        }

        @Override
        public void onSubscribe(Subscription subscription) {
            upstream = subscription;
            actual.onSubscribe(this);
        }

        @Override
        public void onNext(Connection connection) {
            if (state.compareAndSet(WAITING, HANDED_OVER)) {
                actual.onNext(connection);
            } else {
                Mono.from(connection.close()).subscribe(null,
                        e -> log.debug("giving back a connection that arrived after its borrower left failed", e));
            }
        }

        @Override
        public void onError(Throwable error) {
            if (state.get() != CANCELLED) {
                actual.onError(error);
            }
        }

        @Override
        public void onComplete() {
            if (state.get() != CANCELLED) {
                actual.onComplete();
            }
        }

        @Override
        public void request(long n) {
            if (upstream != null) {
                upstream.request(n);
            }
        }

        @Override
        public void cancel() {
            // Once handed over, the pool must not hear of it: it would take back a connection in use.
            if (state.compareAndSet(WAITING, CANCELLED) && upstream != null) {
                upstream.cancel();
            }
        }
    }
}
