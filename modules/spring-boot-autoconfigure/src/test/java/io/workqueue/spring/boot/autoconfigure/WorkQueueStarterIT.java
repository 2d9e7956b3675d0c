package io.workqueue.spring.boot.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueMeters;
import io.workqueue.migrations.WorkQueueMigrations;
import io.workqueue.spring.boot.HandlesQueue;
import io.workqueue.spring.boot.WorkQueueHandler;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.CompositeReactiveHealthContributor;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.ReactiveHealthIndicator;
import org.springframework.boot.jackson.autoconfigure.JacksonAutoConfiguration;
import org.springframework.boot.r2dbc.autoconfigure.R2dbcAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import reactor.core.publisher.Mono;
import tools.jackson.databind.JacksonModule;
import io.workqueue.testing.ExpectedLogs;

/** The auto-configuration against the real server: schema, workers, restarts, housekeeping, health. */
@ExtendWith(ExpectedLogs.class)
class WorkQueueStarterIT {
    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(R2dbcAutoConfiguration.class, WorkQueueAutoConfiguration.class,
                    WorkQueueHealthAutoConfiguration.class))
            .withPropertyValues("spring.r2dbc.url=" + TestDatabase.url());

    @Test
    void theSchemaIsAppliedAtStartupWhenAsked() {
        String prefix = TestDatabase.uniquePrefix();
        runner.withPropertyValues("workqueue.schema.apply=true", "workqueue.table-prefix=" + prefix,
                        "workqueue.queues.tiles.key-type=java.lang.String", "workqueue.housekeeping.enabled=false")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(WorkQueueMigrations.version(TestDatabase.plain(), prefix).block(TIMEOUT))
                            .isEqualTo(WorkQueueMigrations.SCHEMA_VERSION);
                    ReactiveWorkQueue<String> tiles = queue(context.getBean("tiles"));
                    tiles.enqueueKeys("ready").block(TIMEOUT);
                    assertThat(tiles.stats().block(TIMEOUT).pending()).isEqualTo(1);
                });
    }

    @Test
    void aJsonKeyIsStoredInOneCanonicalFormWhateverTheApplicationsJacksonSettings() {
        String prefix = TestDatabase.createTable();
        runner.withConfiguration(AutoConfigurations.of(JacksonAutoConfiguration.class))
                .withBean("moneyModule", JacksonModule.class, OrderKey::moneyModule)
                .withPropertyValues("workqueue.table-prefix=" + prefix,
                        "workqueue.queues.orders.key-type=" + OrderKey.class.getName(),
                        "workqueue.housekeeping.enabled=false",
                        // Each of these would change the stored text of the key below if it applied.
                        "spring.jackson.property-naming-strategy=SNAKE_CASE",
                        "spring.jackson.default-property-inclusion=non_null",
                        "spring.jackson.serialization.indent-output=true",
                        "spring.jackson.datatype.datetime.write-dates-as-timestamps=true",
                        "spring.jackson.time-zone=Asia/Tokyo",
                        "spring.jackson.mapper.sort-properties-alphabetically=false")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    @SuppressWarnings("unchecked")
                    ReactiveWorkQueue<OrderKey> orders = (ReactiveWorkQueue<OrderKey>) context.getBean("orders");
                    OrderKey key = new OrderKey(new OrderKey.Money("EUR", 1250), null, 3,
                            Instant.parse("2024-01-31T10:15:30Z"));

                    orders.enqueueKeys(key).block(TIMEOUT);

                    assertThat(TestDatabase.queryString("SELECT item_key FROM " + WorkQueueMigrations.tableName(prefix)
                            + " WHERE queue_name = $1", "orders"))
                            .isEqualTo("{\"lineCount\":3,\"note\":null,\"placedAt\":\"2024-01-31T10:15:30Z\","
                                    + "\"total\":\"EUR 12.50\"}");
                    assertThat(orders.claim(1, Duration.ofMinutes(1)).block(TIMEOUT))
                            .extracting(Item::key).containsExactly(key);
                });
    }

    @Test
    void aHandlerBeanProcessesItsQueueAndIsRestartedWhenItsStreamFails() {
        String prefix = TestDatabase.uniquePrefix(); // no table yet: the worker's first claims fail for good
        runner.withUserConfiguration(RecordingHandler.class)
                .withPropertyValues("workqueue.table-prefix=" + prefix,
                        "workqueue.queues.jobs.key-type=java.lang.String",
                        "workqueue.queues.jobs.notify-channel=" + prefix + "_work",
                        "workqueue.queues.jobs.worker.poll=200ms",
                        "workqueue.queues.jobs.worker.restart-backoff=50ms",
                        "workqueue.queues.jobs.worker.max-restart-backoff=200ms",
                        "workqueue.housekeeping.enabled=false")
                .run(context -> {
                    // The library names the handler as the starter hands it over: its class and bean.
                    await().atMost(TIMEOUT).until(() -> ExpectedLogs.text().contains(
                            "(bean 'recorder')) ended on an error; restarting it"));
                    assertThat(ExpectedLogs.text()).contains("worker of queue jobs (handler ");
                    WorkQueueMigrations.apply(TestDatabase.plain(), prefix).block(TIMEOUT);
                    ReactiveWorkQueue<String> jobs = queue(context.getBean("jobs"));
                    jobs.enqueueKeys("a", "b", "c").block(TIMEOUT);

                    Set<String> handled = context.getBean(RecordingHandler.class).handled;
                    await().atMost(TIMEOUT).until(() -> handled.containsAll(List.of("a", "b", "c")));
                    await().atMost(TIMEOUT).until(() -> jobs.stats().block(TIMEOUT).completed() == 3);
                });
    }

    @Test
    void housekeepingReapsEveryFullBatchAndFeedsTheGauges() {
        String prefix = TestDatabase.createTable();
        runner.withBean(MeterRegistry.class, SimpleMeterRegistry::new)
                .withPropertyValues("workqueue.table-prefix=" + prefix,
                        "workqueue.queues.done.key-type=java.lang.String",
                        "workqueue.queues.done.retention=1s",
                        "workqueue.queues.done.reap-batch-size=2",
                        "workqueue.housekeeping.interval=200ms")
                .run(context -> {
                    ReactiveWorkQueue<String> done = queue(context.getBean("done"));
                    done.enqueueKeys("a", "b", "c", "d", "e").block(TIMEOUT);
                    List<String> claimed = done.claim(5, Duration.ofMinutes(1)).block(TIMEOUT)
                            .stream().map(Item::key).toList();
                    assertThat(done.complete(claimed).block(TIMEOUT)).isEqualTo(5);

                    // Five rows, two per reap: one round must repeat the reap to clear them.
                    await().atMost(TIMEOUT).until(() -> done.stats().block(TIMEOUT).completed() == 0);
                    MeterRegistry registry = context.getBean(MeterRegistry.class);
                    await().atMost(TIMEOUT).until(() -> registry.find(WorkQueueMeters.REAPED)
                            .tag(WorkQueueMeters.QUEUE_TAG, "done").counter().count() == 5);
                    assertThat(registry.find(WorkQueueMeters.DEPTH).tag(WorkQueueMeters.QUEUE_TAG, "done").gauge()
                            .value()).isZero();
                    assertThat(registry.find(WorkQueueMeters.HORIZON_AGE).tag(WorkQueueMeters.QUEUE_TAG, "done").gauge()
                            .value()).as("horizon() ran too").isNotNaN();
                });
    }

    @Test
    void aQueueIsDownOnceItsOldestReadyItemWaitsLongerThanAllowed() {
        String prefix = TestDatabase.createTable();
        runner.withPropertyValues("workqueue.table-prefix=" + prefix,
                        "workqueue.queues.stuck.key-type=java.lang.String",
                        "workqueue.queues.stuck.health.max-oldest-ready-age=1s",
                        "workqueue.housekeeping.enabled=false")
                .run(context -> {
                    ReactiveHealthIndicator stuck = (ReactiveHealthIndicator) context
                            .getBean("workqueueHealthContributor", CompositeReactiveHealthContributor.class)
                            .getContributor("stuck");
                    Health empty = stuck.health().block(TIMEOUT);
                    assertThat(empty.getStatus().getCode()).isEqualTo("UP");
                    // UP is the cheap probe alone: no counts were read for it.
                    assertThat(empty.getDetails()).containsEntry("queue", "stuck").containsEntry("maxOldestReadyAge", "PT1S")
                            .doesNotContainKeys("depth", "ready", "completed");

                    queue(context.getBean("stuck")).enqueueKeys("nobody works here").block(TIMEOUT);

                    Health down = await().atMost(TIMEOUT).until(() -> stuck.health().block(TIMEOUT),
                            health -> health.getStatus().getCode().equals("DOWN"));
                    assertThat(down.getDetails()).containsEntry("depth", 1L).containsEntry("ready", 1L)
                            .containsEntry("completedCapped", false).containsKeys("leased", "stalled", "completed");
                    assertThat(Duration.parse((String) down.getDetails().get("oldestReadyAge")))
                            .isGreaterThan(Duration.ofSeconds(1));
                });
    }

    /**
     * Issue 26: a handler bean that sleeps, at concurrency 16. On the driver's threads its calls ran
     * one at a time and enqueues and health checks of the same service timed out; on the worker's
     * pool, the default, all sixteen sleep at once (BlockHound, active here, allows it) while an
     * enqueue on the same queue and the queue's health check answer.
     */
    @Test
    void sixteenSleepingHandlersSleepAtOnceWhileEnqueuesAndHealthAnswer() {
        String prefix = TestDatabase.createTable();
        runner.withUserConfiguration(SleepingHandler.class)
                .withPropertyValues("workqueue.table-prefix=" + prefix,
                        "workqueue.queues.sleepy.key-type=java.lang.String",
                        "workqueue.queues.sleepy.worker.concurrency=16",
                        "workqueue.queues.sleepy.worker.poll=200ms",
                        "workqueue.housekeeping.enabled=false")
                .run(context -> {
                    SleepingHandler handler = context.getBean(SleepingHandler.class);
                    ReactiveWorkQueue<String> sleepy = queue(context.getBean("sleepy"));
                    ReactiveHealthIndicator health = (ReactiveHealthIndicator) context
                            .getBean("workqueueHealthContributor", CompositeReactiveHealthContributor.class)
                            .getContributor("sleepy");
                    try {
                        sleepy.enqueueKeys(IntStream.range(0, 16).mapToObj(i -> "nap-" + i).toList()).block(TIMEOUT);
                        await().atMost(TIMEOUT).until(() -> handler.sleeping.get() == 16);

                        sleepy.enqueueKeys("meanwhile").block(Duration.ofSeconds(1));
                        assertThat(health.health().block(Duration.ofSeconds(1)).getStatus().getCode()).isEqualTo("UP");
                        assertThat(handler.sleeping.get()).as("still sleeping meanwhile").isEqualTo(16);
                        assertThat(handler.threads).allMatch(name -> name.startsWith("workqueue-sleepy-"));
                    } finally {
                        handler.wake.countDown();
                    }
                    await().atMost(TIMEOUT).until(() -> sleepy.stats().block(TIMEOUT).completed() == 17);
                });
    }

    @Test
    void onTheDriversThreadsAHandlerBeanHoldingOneIsNamedInAWarning() {
        String prefix = TestDatabase.createTable();
        runner.withUserConfiguration(SpinningHandler.class)
                .withPropertyValues("workqueue.table-prefix=" + prefix,
                        "workqueue.queues.spun.key-type=java.lang.String",
                        "workqueue.queues.spun.worker.handler-scheduler=driver",
                        "workqueue.housekeeping.enabled=false")
                .run(context -> {
                    ReactiveWorkQueue<String> spun = queue(context.getBean("spun"));
                    spun.enqueueKeys("spin").block(TIMEOUT);
                    await().atMost(TIMEOUT).until(() -> spun.stats().block(TIMEOUT).completed() == 1);
                    await().atMost(TIMEOUT).until(() -> ExpectedLogs.text().contains("held non-blocking thread"));
                    String warning = ExpectedLogs.text().lines().filter(line -> line.contains("held non-blocking thread"))
                            .findFirst().orElseThrow();
                    assertThat(warning).contains("WARN")
                            .contains("handler " + SpinningHandler.Spinner.class.getName() + " (bean 'spinner') of queue spun")
                            .contains("on item spin");
                });
    }

    @SuppressWarnings("unchecked")
    private static ReactiveWorkQueue<String> queue(Object bean) {
        return (ReactiveWorkQueue<String>) bean;
    }

    @Configuration(proxyBeanMethods = false)
    static class RecordingHandler {
        final Set<String> handled = ConcurrentHashMap.newKeySet();

        @Bean
        @HandlesQueue("jobs")
        WorkQueueHandler<String> recorder() {
            return item -> Mono.fromRunnable(() -> handled.add(item.key()));
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class SleepingHandler {
        final AtomicInteger sleeping = new AtomicInteger();
        final Set<String> threads = ConcurrentHashMap.newKeySet();
        final CountDownLatch wake = new CountDownLatch(1);

        @Bean
        @HandlesQueue("sleepy")
        WorkQueueHandler<String> sleeper() {
            return item -> {
                threads.add(Thread.currentThread().getName());
                sleeping.incrementAndGet();
                try {
                    // Blocks in handle() itself, as the Thread.sleep did, until the test wakes it.
                    while (!wake.await(10, TimeUnit.MILLISECONDS)) {
                        Thread.sleep(10);
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                } finally {
                    sleeping.decrementAndGet();
                }
                return Mono.empty();
            };
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class SpinningHandler {
        /** Holds its thread for 150 ms without a blocking call (BlockHound would fail one), as CPU-bound work does. */
        static final class Spinner implements WorkQueueHandler<String> {
            @Override
            public Mono<Void> handle(Item<String> item) {
                long end = System.nanoTime() + Duration.ofMillis(150).toNanos();
                long spins = 0;
                while (System.nanoTime() - end < 0) {
                    spins++;
                }
                return spins >= 0 ? Mono.empty() : Mono.never();
            }
        }

        @Bean
        @HandlesQueue("spun")
        Spinner spinner() {
            return new Spinner();
        }
    }
}
