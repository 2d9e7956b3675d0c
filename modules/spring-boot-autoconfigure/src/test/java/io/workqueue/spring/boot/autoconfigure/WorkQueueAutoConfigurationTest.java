package io.workqueue.spring.boot.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.spi.ConnectionFactories;
import io.r2dbc.spi.ConnectionFactory;
import io.r2dbc.spi.Wrapped;
import io.r2dbc.postgresql.PostgresqlConnectionFactory;
import io.workqueue.KeyCodec;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.UnsupportedKeyTypeException;
import io.workqueue.WorkQueueBuilder;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkQueueMeters;
import io.workqueue.WorkerOptions;
import io.workqueue.spring.boot.HandlesQueue;
import io.workqueue.spring.boot.WorkQueueBuilderCustomizer;
import io.workqueue.spring.boot.WorkQueueHandler;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.CompositeReactiveHealthContributor;
import org.springframework.boot.jackson.autoconfigure.JacksonAutoConfiguration;
import org.springframework.boot.health.contributor.ReactiveHealthIndicator;
import org.springframework.boot.r2dbc.autoconfigure.R2dbcAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.ResolvableType;
import reactor.core.publisher.Mono;
import tools.jackson.databind.JacksonModule;
import org.junit.jupiter.api.extension.ExtendWith;
import io.workqueue.testing.ExpectedLogs;
import reactor.core.scheduler.Schedulers;

/**
 * Every condition of the auto-configuration, in contexts that never reach a database: the R2DBC URL
 * points where nothing listens, which also proves that starting the context needs no connection.
 */
@ExtendWith(ExpectedLogs.class)
class WorkQueueAutoConfigurationTest {
    /** A record key, stored as JSON by the default codec. */
    record TileKey(String layer, int x, int y) {}

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(R2dbcAutoConfiguration.class, WorkQueueAutoConfiguration.class,
                    WorkQueueHealthAutoConfiguration.class))
            .withPropertyValues("spring.r2dbc.url=" + TestDatabase.UNREACHABLE_URL,
                    "workqueue.housekeeping.enabled=false");

    // ---------------------------------------------------------------- when nothing is created

    @Test
    void withoutR2dbcOnTheClasspathNothingIsCreated() {
        runner.withClassLoader(new FilteredClassLoader(ConnectionFactory.class))
                .withPropertyValues("workqueue.queues.tiles.key-type=java.lang.String")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context).doesNotHaveBean(WorkQueueProperties.class);
                    assertThat(context).doesNotHaveBean("tiles");
                });
    }

    @Test
    void withoutAConnectionFactoryBeanNothingIsCreated() {
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(WorkQueueAutoConfiguration.class))
                .withPropertyValues("workqueue.queues.tiles.key-type=java.lang.String")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context).doesNotHaveBean(WorkQueueProperties.class);
                    assertThat(context).doesNotHaveBean(ReactiveWorkQueue.class);
                });
    }

    @Test
    void switchedOffNothingIsCreated() {
        runner.withPropertyValues("workqueue.enabled=false", "workqueue.queues.tiles.key-type=java.lang.String")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context).hasSingleBean(ConnectionFactory.class);
                    assertThat(context).doesNotHaveBean(ReactiveWorkQueue.class);
                });
    }

    // ---------------------------------------------------------------- queues

    @Test
    void eachConfiguredQueueIsABeanInjectableByNameAndByKeyType() {
        runner.withPropertyValues(
                        "workqueue.queues.tiles.key-type=" + TileKey.class.getName(),
                        "workqueue.queues.mail.name=outgoing mail",
                        "workqueue.queues.mail.key-type=java.util.UUID")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    ReactiveWorkQueue<?> tiles = context.getBean("tiles", ReactiveWorkQueue.class);
                    ReactiveWorkQueue<?> mail = context.getBean("mail", ReactiveWorkQueue.class);
                    assertThat(tiles.name()).isEqualTo("tiles");
                    assertThat(mail.name()).isEqualTo("outgoing mail");
                    assertThat(context.getBeanProvider(ResolvableType.forClassWithGenerics(
                            ReactiveWorkQueue.class, TileKey.class)).getObject()).isSameAs(tiles);
                    assertThat(context.getBeanProvider(ResolvableType.forClassWithGenerics(
                            ReactiveWorkQueue.class, java.util.UUID.class)).getObject()).isSameAs(mail);
                });
    }

    @Test
    void everyQueuePropertyReachesTheLibraryConfig() {
        runner.withPropertyValues(
                        "workqueue.table-prefix=shared",
                        "workqueue.queues.tiles.table-prefix=tiles",
                        "workqueue.queues.tiles.notify-channel=tiles_work",
                        "workqueue.queues.tiles.notify-on-enqueue=false",
                        "workqueue.queues.tiles.retention=2h",
                        "workqueue.queues.tiles.max-attempts=7",
                        "workqueue.queues.tiles.max-claim-batch=50",
                        "workqueue.queues.tiles.reap-batch-size=20",
                        "workqueue.queues.tiles.write-attempts=5",
                        "workqueue.queues.tiles.min-wake-interval=250ms",
                        "workqueue.queues.tiles.write-timeout=3s",
                        "workqueue.queues.tiles.delete-on-complete=true",
                        "workqueue.queues.tiles.max-write-batch=900",
                        "workqueue.queues.tiles.horizon-warning=90s",
                        "workqueue.queues.mail.key-type=java.lang.String")
                .run(context -> {
                    WorkQueueProperties properties = context.getBean(WorkQueueProperties.class);
                    assertThat(QueueSettings.configOf(properties, "tiles", properties.getQueues().get("tiles")))
                            .isEqualTo(WorkQueueConfig.builder("tiles").tablePrefix("tiles").notifyChannel("tiles_work")
                                    .notifyOnEnqueue(false).retention(Duration.ofHours(2)).maxAttempts(7).maxClaimBatch(50).reapBatchSize(20)
                                    .writeAttempts(5).minWakeInterval(Duration.ofMillis(250))
                                    .writeTimeout(Duration.ofSeconds(3)).deleteOnComplete(true).maxWriteBatch(900)
                                    .horizonWarning(Duration.ofSeconds(90)).build());
                    assertThat(QueueSettings.configOf(properties, "mail", properties.getQueues().get("mail")).tablePrefix())
                            .as("a queue without a prefix of its own takes workqueue.table-prefix")
                            .isEqualTo("shared");
                });
    }

    @Test
    void everyWorkerPropertyReachesTheWorkerOptions() {
        runner.withPropertyValues(
                        "workqueue.queues.tiles.worker.concurrency=3",
                        "workqueue.queues.tiles.worker.lease=2m",
                        "workqueue.queues.tiles.worker.poll=5s",
                        "workqueue.queues.tiles.worker.claim-batch=7",
                        "workqueue.queues.tiles.worker.backoff=100ms",
                        "workqueue.queues.tiles.worker.max-backoff=1s",
                        "workqueue.queues.tiles.worker.handler-scheduler=driver")
                .run(context -> {
                    WorkerOptions options = QueueSettings.options(context.getBean(WorkQueueProperties.class)
                            .getQueues().get("tiles").getWorker());
                    assertThat(options.concurrency()).isEqualTo(3);
                    assertThat(options.lease()).isEqualTo(Duration.ofMinutes(2));
                    assertThat(options.poll()).isEqualTo(Duration.ofSeconds(5));
                    assertThat(options.claimBatch()).isEqualTo(7);
                    assertThat(IntStream.rangeClosed(1, 6).mapToObj(options.backoff()::apply)).containsExactly(
                            Duration.ofMillis(100), Duration.ofMillis(200), Duration.ofMillis(400),
                            Duration.ofMillis(800), Duration.ofSeconds(1), Duration.ofSeconds(1));
                    assertThat(options.handlerScheduler()).containsSame(Schedulers.immediate());
                });
    }

    @Test
    void aZeroBackOffMakesAFailedItemDueAgainAtOnce() {
        runner.withPropertyValues("workqueue.queues.tiles.worker.backoff=0s", "workqueue.queues.tiles.worker.max-backoff=0s")
                .run(context -> {
                    WorkerOptions options = QueueSettings.options(
                            context.getBean(WorkQueueProperties.class).getQueues().get("tiles").getWorker());
                    assertThat(IntStream.of(1, 2, 64).mapToObj(options.backoff()::apply))
                            .containsOnly(Duration.ZERO);
                });
    }

    @Test
    void theHandlerSchedulerPropertyNamesEachChoice() {
        runner.withPropertyValues("workqueue.queues.tiles.worker.handler-scheduler=bounded-elastic",
                        "workqueue.queues.pages.worker.handler-scheduler=worker-pool")
                .run(context -> {
                    WorkQueueProperties properties = context.getBean(WorkQueueProperties.class);
                    assertThat(QueueSettings.options(properties.getQueues().get("tiles").getWorker()).handlerScheduler())
                            .containsSame(Schedulers.boundedElastic());
                    assertThat(QueueSettings.options(properties.getQueues().get("pages").getWorker()).handlerScheduler())
                            .as("the worker's own pool").isEmpty();
                });
    }

    @Test
    void theDefaultsAreTheLibrarysDefaults() {
        WorkQueueProperties properties = new WorkQueueProperties();
        WorkQueueProperties.Queue queue = new WorkQueueProperties.Queue();
        assertThat(QueueSettings.configOf(properties, "tiles", queue)).isEqualTo(WorkQueueConfig.builder("tiles").build());

        WorkerOptions defaults = WorkerOptions.builder().build();
        WorkerOptions options = QueueSettings.options(queue.getWorker());
        assertThat(options.concurrency()).isEqualTo(defaults.concurrency());
        assertThat(options.lease()).isEqualTo(defaults.lease());
        assertThat(options.poll()).isEqualTo(defaults.poll());
        assertThat(options.claimBatch()).isEqualTo(defaults.claimBatch());
        assertThat(options.handlerScheduler()).isEqualTo(defaults.handlerScheduler());
        for (int attempts = 0; attempts <= 64; attempts++) {
            assertThat(options.backoff().apply(attempts)).as("back-off after %d attempts", attempts)
                    .isEqualTo(WorkerOptions.exponentialBackoff(attempts));
        }
    }

    @ParameterizedTest(name = "{0}={1}")
    @CsvSource(delimiter = '|', value = {
            "workqueue.queues.tiles.max-claim-batch     | 0           | maxClaimBatch must be at least 1 but was 0",
            "workqueue.queues.tiles.retention           | 10ms        | retention must be at least PT1S",
            "workqueue.queues.tiles.notify-channel      | Tiles-Work! | notifyChannel",
            "workqueue.queues.tiles.table-prefix        | Bad Prefix  | prefix",
            "workqueue.queues.tiles.max-attempts        | -1          | maxAttempts must be 0 (unlimited) or more but was -1",
            "workqueue.queues.tiles.worker.concurrency  | 0           | concurrency must be at least 1 but was 0",
            "workqueue.queues.tiles.worker.lease        | 0s          | lease must be positive but was PT0S",
            "workqueue.queues.tiles.worker.lease        | 500ns       | lease must be at least 1 microsecond",
            "workqueue.queues.tiles.worker.max-backoff  | 10ms        | must be at least backoff (PT1S) but was PT0.01S",
            "workqueue.queues.tiles.health.max-oldest-ready-age | -1s | must be positive but was PT-1S",
            "workqueue.table-prefix                     | 9lives      | prefix",
            "workqueue.housekeeping.interval            | 0s          | must be positive but was PT0S",
            "workqueue.listener.reconnect-backoff       | 0s          | must be positive but was PT0S",
            "workqueue.listener.max-reconnect-backoff   | 10ms        | must be at least reconnect-backoff (PT0.1S) but was PT0.01S",
            "workqueue.queues.tiles.worker.backoff      | -1s         | must be zero or more but was PT-1S",
            "workqueue.queues.tiles.worker.max-restart-backoff | 10ms | must be at least restart-backoff (PT1S) but was PT0.01S",
            "workqueue.health.timeout                   | 0s          | must be positive but was PT0S",
            "workqueue.health.max-oldest-ready-age      | -5m         | must be positive but was PT-5M",
    })
    void aBadValueFailsTheStartNamingTheProperty(String property, String value, String reason) {
        runner.withPropertyValues("workqueue.queues.tiles.key-type=java.lang.String", property + "=" + value)
                .run(context -> {
                    assertThat(context).hasFailed();
                    String failure = messages(context.getStartupFailure());
                    // Spring names the property by its bean path: workqueue.queues[tiles].maxClaimBatch
                    assertThat(failure).contains(beanPath(property)).contains(reason);
                });
    }

    @Test
    void anUnknownHandlerSchedulerFailsTheStartNamingThePropertyAndTheValue() {
        runner.withPropertyValues("workqueue.queues.tiles.worker.handler-scheduler=everywhere")
                .run(context -> {
                    assertThat(context).hasFailed();
                    assertThat(messages(context.getStartupFailure()))
                            .contains("workqueue.queues.tiles.worker.handler-scheduler").contains("everywhere");
                });
    }

    @Test
    void anUnknownKeyTypeFailsTheStartNamingTheProperty() {
        runner.withPropertyValues("workqueue.queues.tiles.key-type=com.example.NoSuchKey")
                .run(context -> {
                    assertThat(context).hasFailed();
                    assertThat(messages(context.getStartupFailure()))
                            .contains("workqueue.queues.tiles.key-type").contains("com.example.NoSuchKey");
                });
    }

    // ---------------------------------------------------------------- keys and the application's JSON

    @Test
    void aKeyTypeOnlyTheApplicationsJacksonKnowsIsAcceptedThroughItsModules() {
        runner.withConfiguration(AutoConfigurations.of(JacksonAutoConfiguration.class))
                .withBean("moneyModule", JacksonModule.class, OrderKey::moneyModule)
                .withPropertyValues("workqueue.queues.orders.key-type=" + OrderKey.class.getName())
                .run(context -> assertThat(context).hasNotFailed().hasBean("orders"));
    }

    @Test
    void aKeyTypeJacksonCannotWriteFailsTheStartNamingTheType() {
        runner.withConfiguration(AutoConfigurations.of(JacksonAutoConfiguration.class))
                .withPropertyValues("workqueue.queues.orders.key-type=" + OrderKey.class.getName())
                .run(context -> {
                    assertThat(context).hasFailed();
                    assertThat(context.getStartupFailure()).hasRootCauseInstanceOf(UnsupportedKeyTypeException.class);
                    assertThat(messages(context.getStartupFailure()))
                            .contains("Jackson finds no properties to write in " + OrderKey.Money.class.getName())
                            .contains("OrderKey.total");
                });
    }

    @Test
    void aCustomizersKeyCodecWinsOverTheApplicationsJackson() {
        KeyCodec<OrderKey> byNote = new KeyCodec<>() {
            @Override
            public String encode(OrderKey key) {
                return key.note();
            }

            @Override
            public OrderKey decode(String encoded) {
                return new OrderKey(null, encoded, 0, null);
            }
        };
        runner.withConfiguration(AutoConfigurations.of(JacksonAutoConfiguration.class))
                .withBean(WorkQueueBuilderCustomizer.class, () -> (queueBean, builder) -> {
                    @SuppressWarnings("unchecked")
                    WorkQueueBuilder<OrderKey> orders = (WorkQueueBuilder<OrderKey>) builder;
                    orders.keyCodec(byNote);
                })
                .withPropertyValues("workqueue.queues.orders.key-type=" + OrderKey.class.getName())
                .run(context -> assertThat(context).hasNotFailed().hasBean("orders"));
    }

    // ---------------------------------------------------------------- the application's beans win

    @Test
    void aQueueBeanTheApplicationDefinesWinsAndGetsTheWorker() {
        runner.withUserConfiguration(OwnTilesQueue.class, TilesHandler.class)
                .withPropertyValues("workqueue.queues.tiles.key-type=" + TileKey.class.getName())
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context.getBean("tiles", ReactiveWorkQueue.class).name()).isEqualTo("own tiles");
                    assertThat(context.getBean(QueueWorkers.class).handlers()).containsEntry("tiles", "tilesHandler");
                });
    }

    @Test
    void connectionFactoriesTheApplicationDefinesWin() {
        ConnectionFactory own = ConnectionFactories.get(TestDatabase.UNREACHABLE_URL);
        runner.withBean(WorkQueueConnectionFactories.class, () -> WorkQueueConnectionFactories.of(own, own))
                .withPropertyValues("workqueue.queues.tiles.key-type=java.lang.String")
                .run(context -> assertThat(context.getBean(WorkQueueConnectionFactories.class).statements())
                        .isSameAs(own));
    }

    @Test
    void aHealthContributorTheApplicationDefinesWins() {
        CompositeReactiveHealthContributor own = CompositeReactiveHealthContributor.fromMap(java.util.Map.of());
        runner.withBean("workqueueHealthContributor", CompositeReactiveHealthContributor.class, () -> own)
                .withPropertyValues("workqueue.queues.tiles.key-type=java.lang.String")
                .run(context -> assertThat(context.getBean("workqueueHealthContributor")).isSameAs(own));
    }

    // ---------------------------------------------------------------- connections

    @Test
    void queuesUseThePoolAndListenersThePlainFactoryInsideIt() {
        runner.withPropertyValues("workqueue.queues.tiles.notify-channel=tiles_work")
                .run(context -> {
                    ConnectionFactory application = context.getBean(ConnectionFactory.class);
                    assertThat(application).isInstanceOf(ConnectionPool.class);
                    WorkQueueConnectionFactories connections = context.getBean(WorkQueueConnectionFactories.class);
                    assertThat(connections.statements()).isSameAs(application);
                    // Boot wraps the driver's factory (to keep its options) before pooling it: both
                    // layers come off, leaving the driver's own, which opens a connection per create().
                    assertThat(connections.listener()).isInstanceOf(PostgresqlConnectionFactory.class)
                            .isSameAs(((Wrapped<?>) ((ConnectionPool) application).unwrap()).unwrap());
                });
    }

    @Test
    void withoutAPoolListenersGetTheSamePlainFactory() {
        runner.withPropertyValues("spring.r2dbc.pool.enabled=false", "workqueue.queues.tiles.notify-channel=tiles_work")
                .run(context -> {
                    ConnectionFactory application = context.getBean(ConnectionFactory.class);
                    assertThat(application).isNotInstanceOf(ConnectionPool.class);
                    WorkQueueConnectionFactories connections = context.getBean(WorkQueueConnectionFactories.class);
                    assertThat(connections.statements()).isSameAs(application);
                    assertThat(connections.listener()).isInstanceOf(PostgresqlConnectionFactory.class);
                });
    }

    // ---------------------------------------------------------------- handlers and workers

    @Test
    void aHandlerBeanBecomesTheWorkerOfItsQueue() {
        runner.withUserConfiguration(TilesHandler.class)
                .withPropertyValues("workqueue.queues.tiles.key-type=" + TileKey.class.getName())
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    QueueWorkers workers = context.getBean(QueueWorkers.class);
                    assertThat(workers.handlers()).containsExactly(java.util.Map.entry("tiles", "tilesHandler"));
                    assertThat(workers.isRunning()).isTrue();
                });
    }

    @Test
    void aSwitchedOffWorkerIsNotRun() {
        runner.withUserConfiguration(TilesHandler.class)
                .withPropertyValues("workqueue.queues.tiles.key-type=" + TileKey.class.getName(),
                        "workqueue.queues.tiles.worker.enabled=false")
                .run(context -> assertThat(context.getBean(QueueWorkers.class).handlers()).isEmpty());
    }

    @Test
    void aHandlerWithoutHandlesQueueFailsTheStart() {
        runner.withUserConfiguration(UnboundHandler.class)
                .withPropertyValues("workqueue.queues.tiles.key-type=java.lang.String")
                .run(context -> assertThat(messages(context.getStartupFailure()))
                        .contains("WorkQueueHandler bean 'unbound' names no queue"));
    }

    @Test
    void aHandlerBoundToAnUnknownQueueFailsTheStart() {
        runner.withUserConfiguration(TilesHandler.class)
                .withPropertyValues("workqueue.queues.mail.key-type=java.lang.String")
                .run(context -> assertThat(messages(context.getStartupFailure()))
                        .contains("bound to queue 'tiles', but there is no ReactiveWorkQueue bean of that name"));
    }

    @Test
    void twoHandlersOnOneQueueFailTheStart() {
        runner.withUserConfiguration(TilesHandler.class, SecondTilesHandler.class)
                .withPropertyValues("workqueue.queues.tiles.key-type=" + TileKey.class.getName())
                .run(context -> assertThat(messages(context.getStartupFailure()))
                        .contains("are both bound to queue 'tiles'"));
    }

    @Test
    void aHandlerOfAnotherKeyTypeFailsTheStart() {
        runner.withUserConfiguration(TilesHandler.class)
                .withPropertyValues("workqueue.queues.tiles.key-type=java.lang.String")
                .run(context -> assertThat(messages(context.getStartupFailure()))
                        .contains("handles keys of type " + TileKey.class.getName())
                        .contains("holds keys of type java.lang.String"));
    }

    // ---------------------------------------------------------------- switches

    @Test
    void theSchemaIsLeftToMigrationToolsByDefault() {
        runner.withPropertyValues("workqueue.queues.tiles.key-type=java.lang.String")
                .run(context -> assertThat(context).doesNotHaveBean(SchemaInitializer.class));
    }

    @Test
    void housekeepingRunsUnlessSwitchedOff() {
        runner.withPropertyValues("workqueue.queues.tiles.key-type=java.lang.String", "workqueue.housekeeping.enabled=true")
                .run(context -> assertThat(context.getBean(QueueHousekeeping.class).isRunning()).isTrue());
        runner.withPropertyValues("workqueue.queues.tiles.key-type=java.lang.String")
                .run(context -> assertThat(context).doesNotHaveBean(QueueHousekeeping.class));
    }

    // ---------------------------------------------------------------- observability

    @Test
    void theApplicationsMeterRegistryRecordsEveryQueue() {
        runner.withBean(MeterRegistry.class, SimpleMeterRegistry::new)
                .withPropertyValues("workqueue.queues.tiles.key-type=java.lang.String")
                .run(context -> {
                    context.getBean("tiles");
                    assertThat(context.getBean(MeterRegistry.class).find(WorkQueueMeters.ENQUEUED)
                            .tag(WorkQueueMeters.QUEUE_TAG, "tiles").counter()).isNotNull();
                });
    }

    @Test
    void withoutMicrometerQueuesStillWork() {
        runner.withClassLoader(new FilteredClassLoader(MeterRegistry.class,
                        io.micrometer.observation.ObservationRegistry.class, io.micrometer.tracing.Tracer.class))
                .withPropertyValues("workqueue.queues.tiles.key-type=java.lang.String")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context).hasBean("tiles");
                    assertThat(context).doesNotHaveBean(WorkQueueBuilderCustomizer.class);
                });
    }

    @Test
    void eachQueueHasAHealthIndicatorUnderWorkqueue() {
        runner.withPropertyValues("workqueue.queues.tiles.key-type=java.lang.String",
                        "workqueue.queues.mail.key-type=java.lang.String")
                .run(context -> {
                    CompositeReactiveHealthContributor health = context.getBean("workqueueHealthContributor",
                            CompositeReactiveHealthContributor.class);
                    assertThat(health.stream().map(entry -> entry.name())).containsExactlyInAnyOrder("tiles", "mail");
                    assertThat(health.getContributor("tiles")).isInstanceOf(QueueHealthIndicator.class);
                });
    }

    @Test
    void anUnreachableDatabaseIsDown() {
        runner.withPropertyValues("workqueue.queues.tiles.key-type=java.lang.String", "workqueue.health.timeout=2s")
                .run(context -> {
                    ReactiveHealthIndicator tiles = (ReactiveHealthIndicator) context
                            .getBean("workqueueHealthContributor", CompositeReactiveHealthContributor.class)
                            .getContributor("tiles");
                    assertThat(tiles.health().block(Duration.ofSeconds(10)).getStatus().getCode()).isEqualTo("DOWN");
                });
    }

    @Test
    void healthIsLeftOutWhenSwitchedOffOrAbsent() {
        runner.withPropertyValues("workqueue.queues.tiles.key-type=java.lang.String",
                        "management.health.workqueue.enabled=false")
                .run(context -> assertThat(context).doesNotHaveBean("workqueueHealthContributor"));
        runner.withClassLoader(new FilteredClassLoader(ReactiveHealthIndicator.class))
                .withPropertyValues("workqueue.queues.tiles.key-type=java.lang.String")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context).hasBean("tiles");
                    assertThat(context).doesNotHaveBean("workqueueHealthContributor");
                });
    }

    // ---------------------------------------------------------------- fixtures

    /** Every message of a failure's cause chain, on one line each. */
    static String messages(Throwable failure) {
        StringBuilder all = new StringBuilder();
        for (Throwable t = failure; t != null; t = t.getCause()) {
            all.append(t.getMessage()).append('\n');
        }
        return all.toString();
    }

    /** workqueue.queues.tiles.max-claim-batch as Spring's validation names it: workqueue.queues[tiles].maxClaimBatch. */
    private static String beanPath(String property) {
        String path = property.replaceFirst("^workqueue\\.queues\\.([^.]+)\\.", "workqueue.queues[$1].");
        StringBuilder camel = new StringBuilder();
        for (int i = 0; i < path.length(); i++) {
            char c = path.charAt(i);
            if (c == '-' && i + 1 < path.length()) {
                camel.append(Character.toUpperCase(path.charAt(++i)));
            } else {
                camel.append(c);
            }
        }
        return camel.toString().substring("workqueue.".length());
    }

    @Configuration(proxyBeanMethods = false)
    static class TilesHandler {
        @Bean
        @HandlesQueue("tiles")
        WorkQueueHandler<TileKey> tilesHandler() {
            return item -> Mono.empty();
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class SecondTilesHandler {
        @Bean
        @HandlesQueue("tiles")
        WorkQueueHandler<TileKey> moreTiles() {
            return item -> Mono.empty();
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class UnboundHandler {
        @Bean
        WorkQueueHandler<String> unbound() {
            return item -> Mono.empty();
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnTilesQueue {
        @Bean
        ReactiveWorkQueue<TileKey> tiles() {
            return ReactiveWorkQueue.builder(ConnectionFactories.get(TestDatabase.UNREACHABLE_URL), TileKey.class)
                    .config(WorkQueueConfig.builder("own tiles").build())
                    .build();
        }
    }
}
