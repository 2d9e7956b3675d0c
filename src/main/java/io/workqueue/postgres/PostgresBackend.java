package io.workqueue.postgres;

import io.r2dbc.spi.ConnectionFactory;
import io.workqueue.KeyCodec;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueAdmin;
import io.workqueue.WorkQueueBackend;
import io.workqueue.WorkQueueConfig;
import io.workqueue.internal.MicrometerQueueMetrics;
import io.workqueue.internal.MicrometerQueueObservations;
import io.workqueue.internal.QueueMetrics;
import io.workqueue.internal.QueueObservations;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/**
 * The PostgreSQL implementation of the queue and the admin, as the API's builders find it through
 * {@link java.util.ServiceLoader} ({@code META-INF/services/io.workqueue.WorkQueueBackend}).
 * Stateless and thread-safe.
 */
public final class PostgresBackend implements WorkQueueBackend {
    /** For {@link java.util.ServiceLoader}. */
    public PostgresBackend() {}

    @Override
    public <K> ReactiveWorkQueue<K> queue(ConnectionFactory connectionFactory, WorkQueueConfig config,
            KeyCodec<K> codec, @Nullable Publisher<?> wakeups, Scheduler timer, @Nullable Object meterRegistry) {
        return queue(connectionFactory, config, codec, wakeups, timer, meterRegistry, null);
    }

    @Override
    public <K> ReactiveWorkQueue<K> queue(ConnectionFactory connectionFactory, WorkQueueConfig config,
            KeyCodec<K> codec, @Nullable Publisher<?> wakeups, Scheduler timer, @Nullable Object meterRegistry,
            @Nullable Object observationRegistry) {
        QueueMetrics metrics = meterRegistry == null
                ? QueueMetrics.NONE
                : MicrometerQueueMetrics.forRegistry(meterRegistry, config.name());
        QueueObservations observations = observationRegistry == null
                ? QueueObservations.NONE
                : MicrometerQueueObservations.forRegistry(observationRegistry, config.name());
        return PostgresWorkQueue.create(connectionFactory, config, codec, wakeups, timer, metrics, observations);
    }

    @Override
    public Mono<Integer> schemaVersion(ConnectionFactory connectionFactory, String tablePrefix) {
        return Schema.version(connectionFactory, tablePrefix);
    }

    @Override
    public Mono<Void> applySchema(ConnectionFactory connectionFactory, String tablePrefix, List<String> statements,
            int version) {
        return Schema.apply(connectionFactory, tablePrefix, statements, version);
    }

    @Override
    public WorkQueueAdmin admin(ConnectionFactory connectionFactory, String tablePrefix, List<AdminQueue> queues,
            int writeAttempts) {
        List<PostgresWorkQueueAdmin.QueueSettings> settings = new ArrayList<>(queues.size());
        for (AdminQueue queue : queues) {
            ReactiveWorkQueue<?> instance = queue.queue();
            WorkQueueConfig config = queue.config();
            settings.add(instance != null
                    ? PostgresWorkQueueAdmin.QueueSettings.of(instance)
                    : PostgresWorkQueueAdmin.QueueSettings.of(Objects.requireNonNull(config, "config"),
                            queue.codec()));
        }
        return PostgresWorkQueueAdmin.create(connectionFactory, tablePrefix, settings, writeAttempts);
    }
}
