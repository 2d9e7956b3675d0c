package io.workqueue;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.pool.ConnectionPoolConfiguration;
import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactory;
import io.r2dbc.spi.ConnectionFactoryMetadata;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
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

    // ------------------------------------------------------------------ one exception type per rule

    static Stream<Arguments> nullSettings() {
        NamedFactory postgres = new NamedFactory("PostgreSQL");
        return Stream.of(
                Arguments.of("connectionFactory", (Supplier<WorkQueueBuilder<String>>)
                        () -> ReactiveWorkQueue.builder(null, String.class).config(config())),
                Arguments.of("keyType", (Supplier<WorkQueueBuilder<String>>)
                        () -> ReactiveWorkQueue.<String>builder(postgres, null).config(config())),
                Arguments.of("config", (Supplier<WorkQueueBuilder<String>>)
                        () -> ReactiveWorkQueue.builder(postgres, String.class).config(null)),
                Arguments.of("keyCodec", (Supplier<WorkQueueBuilder<String>>)
                        () -> ReactiveWorkQueue.builder(postgres, String.class).config(config()).keyCodec(null)),
                Arguments.of("wakeups", (Supplier<WorkQueueBuilder<String>>)
                        () -> ReactiveWorkQueue.builder(postgres, String.class).config(config()).wakeups(null)),
                Arguments.of("meterRegistry", (Supplier<WorkQueueBuilder<String>>)
                        () -> ReactiveWorkQueue.builder(postgres, String.class).config(config()).meterRegistry(null)),
                Arguments.of("timer", (Supplier<WorkQueueBuilder<String>>)
                        () -> ReactiveWorkQueue.builder(postgres, String.class).config(config()).timer(null)));
    }

    /**
     * A {@code null} setting is a bad setting like any other: an {@link InvalidConfigException}
     * from {@code build()} naming it, never a {@code NullPointerException} from the setter (as every
     * one of these used to be), and never silently replaced by the default.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("nullSettings")
    void aNullSettingIsAnInvalidConfigExceptionFromBuildNamingIt(String setting,
            Supplier<WorkQueueBuilder<String>> givenNull) {
        WorkQueueBuilder<String> builder = assertDoesNotThrow(givenNull::get, "a setter records; build() checks");

        InvalidConfigException e = assertThrows(InvalidConfigException.class, builder::build);

        assertTrue(e.getMessage().contains(setting) && e.getMessage().contains("null"), e.getMessage());
    }

    @Test
    void aLaterValueReplacesANullOne() {
        NamedFactory postgres = new NamedFactory("PostgreSQL");
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(postgres, String.class)
                .config(null).config(config())
                .keyCodec(null).keyCodec(KeyCodec.defaultFor(String.class))
                .timer(null).timer(reactor.core.scheduler.Schedulers.parallel())
                .build();

        assertEquals("builder-test", queue.name());
    }
}
