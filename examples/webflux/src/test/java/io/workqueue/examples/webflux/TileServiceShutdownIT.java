package io.workqueue.examples.webflux;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.MeterRegistry;
import io.r2dbc.pool.ConnectionPool;
import io.workqueue.QueueClosedException;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueMeters;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.SmartLifecycle;
import org.springframework.core.ResolvableType;
import org.springframework.test.web.reactive.server.WebTestClient;

/**
 * Closing the application stops the worker gracefully and then releases the queue's resources. The
 * test starts the application itself, on a random port, because it closes it: a context owned by
 * the Spring test framework must stay open until the framework is done with it.
 */
class TileServiceShutdownIT {

    @Test
    void closingTheContextSettlesInFlightWorkThenReleasesEverything() {
        // Arguments, because they override application.yml (builder properties would not).
        ConfigurableApplicationContext context = new SpringApplicationBuilder(TileServiceApplication.class)
                .run("--server.port=0", "--workqueue.queues.tiles.name=tiles-shutdown-it-" + UUID.randomUUID());
        MeterRegistry meters = context.getBean(MeterRegistry.class);
        SmartLifecycle workers = context.getBean("workQueueWorkers", SmartLifecycle.class);
        ConnectionPool connectionPool = context.getBean(ConnectionPool.class);
        ReactiveWorkQueue<TileKey> queue = context.<ReactiveWorkQueue<TileKey>>getBeanProvider(
                ResolvableType.forClassWithGenerics(ReactiveWorkQueue.class, TileKey.class)).getObject();
        try {
            String port = context.getEnvironment().getRequiredProperty("local.server.port");
            WebTestClient client = WebTestClient.bindToServer().baseUrl("http://localhost:" + port).build();
            // Work in flight when the context closes: stopping must let it finish, not abandon its leases.
            TileServiceIT.postConcurrently(client, "terrain", 100);
        } finally {
            context.close();
        }

        assertThat(workers.isRunning()).isFalse();
        // The queue's own meters: what the worker leased, and what it completed or released.
        assertThat(count(meters, queue, WorkQueueMeters.CLAIMED)).isPositive();
        assertThat(count(meters, queue, WorkQueueMeters.CLAIMED))
                .as("every tile the worker leased was completed or released before the context closed")
                .isEqualTo(count(meters, queue, WorkQueueMeters.COMPLETED) + count(meters, queue, WorkQueueMeters.RELEASED));
        assertThatThrownBy(() -> queue.enqueueKeys(new TileKey("roads", 0, 0)).block())
                .as("closing the context closed the queue")
                .isInstanceOf(QueueClosedException.class);
        assertThat(connectionPool.isDisposed()).isTrue();
    }

    private static double count(MeterRegistry meters, ReactiveWorkQueue<?> queue, String counter) {
        return meters.get(counter).tag(WorkQueueMeters.QUEUE_TAG, queue.name()).counter().count();
    }
}
