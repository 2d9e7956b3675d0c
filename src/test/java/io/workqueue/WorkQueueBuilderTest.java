package io.workqueue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.pool.ConnectionPoolConfiguration;
import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactory;
import io.r2dbc.spi.ConnectionFactoryMetadata;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Mono;

/**
 * What {@link WorkQueueBuilder#build()} refuses, synchronously. The factories here are never
 * connected: they only report a product name, which is all the dialect check reads.
 */
class WorkQueueBuilderTest {

    /**
     * A connection factory for some product, counting connection attempts (subscriptions to
     * {@code create()}; a pool assembles that publisher up front without subscribing) and failing
     * them.
     */
    private static final class NamedFactory implements ConnectionFactory {
        final AtomicInteger creates = new AtomicInteger();
        private final String product;

        NamedFactory(String product) {
            this.product = product;
        }

        @Override
        public Publisher<? extends Connection> create() {
            return Mono.defer(() -> {
                creates.incrementAndGet();
                return Mono.error(new AssertionError("this factory must never be connected"));
            });
        }

        @Override
        public ConnectionFactoryMetadata getMetadata() {
            return () -> product;
        }
    }

    private static WorkQueueConfig config() {
        return WorkQueueConfig.builder("builder-test").build();
    }

    @Test
    void aFactoryForAnotherDatabaseIsRefused() {
        NamedFactory h2 = new NamedFactory("H2");
        WorkQueueBuilder<String> builder = ReactiveWorkQueue.builder(h2, String.class).config(config());

        UnsupportedDialectException e = assertThrows(UnsupportedDialectException.class, builder::build);

        assertTrue(e.getMessage().contains("H2"), e.getMessage());
        assertEquals(0, h2.creates.get(), "the check reads metadata; it does not connect");
    }

    @Test
    void aPoolOverAFactoryForAnotherDatabaseIsRefused() {
        NamedFactory h2 = new NamedFactory("H2");
        ConnectionPool pool = new ConnectionPool(ConnectionPoolConfiguration.builder(h2).build());
        try {
            WorkQueueBuilder<String> builder = ReactiveWorkQueue.builder(pool, String.class).config(config());

            UnsupportedDialectException e = assertThrows(UnsupportedDialectException.class, builder::build);

            assertTrue(e.getMessage().contains("H2"), e.getMessage());
            assertEquals(0, h2.creates.get());
        } finally {
            pool.dispose();
        }
    }

    @Test
    void otherDatabasesAreRefusedWhateverTheirName() {
        for (String product : new String[] {"MySQL", "MariaDB", "Microsoft SQL Server", "Oracle Database", "CockroachDB", ""}) {
            WorkQueueBuilder<String> builder = ReactiveWorkQueue.builder(new NamedFactory(product), String.class).config(config());
            assertThrows(UnsupportedDialectException.class, builder::build, product);
        }
    }

    @Test
    void buildingWithoutAConfigIsRefused() {
        WorkQueueBuilder<String> builder = ReactiveWorkQueue.builder(new NamedFactory("PostgreSQL"), String.class);

        InvalidConfigException e = assertThrows(InvalidConfigException.class, builder::build);

        assertTrue(e.getMessage().contains("config"), e.getMessage());
    }

    @Test
    void buildingAndCallingMethodsWithoutSubscribingNeverConnects() {
        NamedFactory postgres = new NamedFactory("PostgreSQL");
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(postgres, String.class).config(config()).build();

        assertEquals("builder-test", queue.name());
        queue.enqueueKeys("a");
        queue.claim(10, java.time.Duration.ofSeconds(30));
        queue.complete("a");
        queue.stats();
        queue.reap();

        assertEquals(0, postgres.creates.get(), "every publisher is cold");
    }
}
