package io.workqueue.spring.boot.starter;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.r2dbc.pool.ConnectionPool;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.Stats;
import io.workqueue.WorkQueueConfig;
import io.workqueue.migrations.WorkQueueMigrations;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.SmartLifecycle;
import org.springframework.core.ParameterizedTypeReference;
import org.springframework.test.web.reactive.server.WebTestClient;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * A real WebFlux application on the starter, against the real server, end to end: enqueue over
 * HTTP, work through a handler bean, health and metrics through Actuator, and a clean shutdown with
 * items in flight that leaves none of them leased. The application is started and closed here (not
 * by Spring's test framework), because closing it is under test.
 */
class StarterApplicationIT {
    private static final Duration TIMEOUT = Duration.ofSeconds(60);
    private static final int JOBS = 40;

    @Test
    void enqueuedOverHttpWorkedByTheHandlerReportedByActuatorAndSettledOnShutdown() throws Exception {
        String prefix = TestDatabase.uniquePrefix();
        ConfigurableApplicationContext context = new SpringApplicationBuilder(JobsApplication.class).run(
                "--server.port=0",
                "--spring.r2dbc.url=" + TestDatabase.url(),
                "--workqueue.schema.apply=true",
                "--workqueue.table-prefix=" + prefix,
                "--workqueue.queues.jobs.notify-channel=" + prefix + "_work",
                "--workqueue.queues.jobs.worker.concurrency=4",
                "--workqueue.queues.jobs.worker.backoff=1h",
                "--workqueue.queues.jobs.worker.max-backoff=1h",
                "--workqueue.housekeeping.interval=500ms",
                "--management.endpoints.web.exposure.include=health,metrics",
                "--management.endpoint.health.show-details=always",
                "--spring.lifecycle.timeout-per-shutdown-phase=30s");
        JobsApplication application = context.getBean(JobsApplication.class);
        ConnectionPool pool = context.getBean(ConnectionPool.class);
        Thread closer = new Thread(context::close, "closer");
        try {
            WebTestClient client = WebTestClient.bindToServer()
                    .baseUrl("http://localhost:" + context.getEnvironment().getRequiredProperty("local.server.port"))
                    .responseTimeout(Duration.ofSeconds(30))
                    .build();

            // Enqueued over HTTP, many requests at once; worked by the handler bean.
            List<String> keys = IntStream.range(0, JOBS).mapToObj(i -> "job-" + i).toList();
            Flux.fromIterable(keys).parallel(8).runOn(Schedulers.boundedElastic())
                    .doOnNext(key -> client.post().uri("/jobs/{key}", key).exchange().expectStatus().isAccepted())
                    .sequential().blockLast(TIMEOUT);
            await().atMost(TIMEOUT).until(() -> application.succeeded.containsAll(keys));
            await().atMost(TIMEOUT).until(() -> stats(prefix).completed() == JOBS);

            // Health: UP, from the cheap probe (the counts are the gauges' and, when DOWN, the details').
            Map<String, Object> health = json(client, "/actuator/health/workqueue");
            assertThat(health).containsEntry("status", "UP");
            assertThat(details(health, "jobs")).containsEntry("queue", "jobs").containsKeys("maxOldestReadyAge")
                    .doesNotContainKeys("depth");
            // Metrics: the library's meters, recorded to the application's registry.
            Map<String, Object> completed = json(client, "/actuator/metrics/workqueue.completed?tag=queue:jobs");
            assertThat(measurement(completed)).isEqualTo(JOBS);
            await().atMost(TIMEOUT).until(() -> measurement(json(client, "/actuator/metrics/workqueue.depth?tag=queue:jobs")) == 0);

            // Two items in flight when the service is told to stop: one will succeed, one fail.
            client.post().uri("/jobs/held-ok").exchange().expectStatus().isAccepted();
            client.post().uri("/jobs/held-fail").exchange().expectStatus().isAccepted();
            await().atMost(TIMEOUT).until(() -> application.started.containsAll(List.of("held-ok", "held-fail")));
            SmartLifecycle workers = context.getBean("workQueueWorkers", SmartLifecycle.class);

            closer.start();
            await().atMost(TIMEOUT).until(() -> !workers.isRunning());
            assertThat(stats(prefix).leased()).as("shutdown waits for the handlers in flight").isEqualTo(2);
            assertThat(closer.isAlive()).isTrue();
            application.gate.tryEmitEmpty();
            closer.join(TimeUnit.SECONDS.toMillis(60));
            assertThat(closer.isAlive()).as("the context closed").isFalse();
        } finally {
            if (!closer.isAlive() && context.isActive()) {
                context.close();
            }
        }

        Stats after = stats(prefix);
        assertThat(after.leased()).as("no lease left behind by a clean shutdown").isZero();
        assertThat(after.completed()).as("the held item that succeeded was completed").isEqualTo(JOBS + 1);
        assertThat(after.pending()).as("the one that failed was released, to run again later").isEqualTo(1);
        assertThat(TestDatabase.queryString("SELECT last_error FROM " + WorkQueueMigrations.tableName(prefix)
                + " WHERE item_key = 'held-fail'")).contains("failed while the service stopped");
        assertThat(pool.isDisposed()).as("closing the context disposed the pool too").isTrue();
    }

    @Test
    void blockHoundGuardsThisTest() {
        // The application above runs under BlockHound (blockhound-junit-platform): prove it is on,
        // so that its passing means no blocking call was made on a Reactor or Netty thread.
        assertThatThrownBy(() -> Mono.delay(Duration.ofMillis(1))
                        .doOnNext(tick -> {
                            try {
                                Thread.sleep(1);
                            } catch (InterruptedException e) {
                                Thread.currentThread().interrupt();
                            }
                        })
                        .block(TIMEOUT))
                .hasMessageContaining("Blocking call");
    }

    /** The queue's stats, read through a queue of our own on a connection of our own. */
    private static Stats stats(String prefix) {
        return ReactiveWorkQueue.builder(TestDatabase.plain(), String.class)
                .config(WorkQueueConfig.builder("jobs").tablePrefix(prefix).build())
                .build()
                .stats()
                .block(TIMEOUT);
    }

    private static Map<String, Object> json(WebTestClient client, String uri) {
        return client.get().uri(uri).exchange()
                .expectBody(new ParameterizedTypeReference<Map<String, Object>>() {})
                .returnResult().getResponseBody();
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> details(Map<String, Object> health, String queue) {
        Map<String, Object> components = (Map<String, Object>) health.get("components");
        return (Map<String, Object>) ((Map<String, Object>) components.get(queue)).get("details");
    }

    @SuppressWarnings("unchecked")
    private static double measurement(Map<String, Object> metric) {
        List<Map<String, Object>> measurements = (List<Map<String, Object>>) metric.get("measurements");
        return ((Number) measurements.get(0).get("value")).doubleValue();
    }
}
