package io.workqueue.testing;

import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactory;
import io.r2dbc.spi.ConnectionFactoryMetadata;
import java.util.concurrent.atomic.AtomicInteger;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Mono;

/**
 * A connection factory that counts the connections actually asked for (subscriptions to
 * {@link #create()}), so a test can tell whether an operation touched the database at all, and how
 * many statements a loop issued. Reports the metadata of the factory it wraps.
 */
public final class CountingConnectionFactory implements ConnectionFactory {
    private final ConnectionFactory delegate;
    private final AtomicInteger creates = new AtomicInteger();

    public CountingConnectionFactory(ConnectionFactory delegate) {
        this.delegate = delegate;
    }

    @Override
    public Publisher<? extends Connection> create() {
        return Mono.defer(() -> {
            creates.incrementAndGet();
            return Mono.from(delegate.create());
        });
    }

    @Override
    public ConnectionFactoryMetadata getMetadata() {
        return delegate.getMetadata();
    }

    /** How many connections have been asked for so far. */
    public int creates() {
        return creates.get();
    }
}
