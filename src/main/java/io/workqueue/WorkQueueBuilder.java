package io.workqueue;

import io.micrometer.core.instrument.MeterRegistry;
import io.r2dbc.spi.ConnectionFactory;
import io.workqueue.internal.MicrometerQueueMetrics;
import io.workqueue.internal.QueueMetrics;
import io.workqueue.postgres.PostgresWorkQueue;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * Assembles a {@link ReactiveWorkQueue}. Obtain one from {@link ReactiveWorkQueue#builder}. Not
 * thread-safe; {@link #build()} validates everything synchronously and throws, unlike the queue's
 * own methods.
 *
 * @param <K> the key type
 */
public final class WorkQueueBuilder<K> {
    private final ConnectionFactory connectionFactory;
    private final Class<K> keyType;
    private @Nullable WorkQueueConfig config;
    private @Nullable KeyCodec<K> keyCodec;
    private @Nullable Publisher<?> wakeups;
    private Scheduler timer = Schedulers.parallel();
    /** Held as {@code Object} so that this class never needs Micrometer unless a registry is given. */
    private @Nullable Object meterRegistry;

    WorkQueueBuilder(ConnectionFactory connectionFactory, Class<K> keyType) {
        this.connectionFactory = Objects.requireNonNull(connectionFactory, "connectionFactory");
        this.keyType = Objects.requireNonNull(keyType, "keyType");
    }

    /** The queue's configuration; required. */
    public WorkQueueBuilder<K> config(WorkQueueConfig config) {
        this.config = Objects.requireNonNull(config, "config");
        return this;
    }

    /** Overrides {@link KeyCodec#defaultFor} for the key type. */
    public WorkQueueBuilder<K> keyCodec(KeyCodec<K> codec) {
        this.keyCodec = Objects.requireNonNull(codec, "codec");
        return this;
    }

    /**
     * A source of "there may be work" signals that ends {@link ReactiveWorkQueue#awaitWork} early;
     * any element counts, its value is ignored. Typically a
     * {@code PgNotificationListener}'s {@code wakeups()}. It is subscribed once, on the first wait,
     * and its completion or error only stops wakeups (the poll still runs).
     */
    public WorkQueueBuilder<K> wakeups(Publisher<?> wakeups) {
        this.wakeups = Objects.requireNonNull(wakeups, "wakeups");
        return this;
    }

    /**
     * Records the meters named in {@link WorkQueueMeters} to {@code registry}, tagged with the
     * queue's name. Micrometer is an optional dependency: without this call it need not be on the
     * classpath. Build one instance per queue name and registry: a second instance with the same
     * name shares the counters, but Micrometer keeps the first instance's gauges.
     */
    public WorkQueueBuilder<K> meterRegistry(MeterRegistry registry) {
        this.meterRegistry = Objects.requireNonNull(registry, "registry");
        return this;
    }

    /**
     * The scheduler for the queue's timers (poll delays, wake floor, claim back-off); default
     * {@link Schedulers#parallel()}. Tests pass a virtual-time scheduler.
     */
    public WorkQueueBuilder<K> timer(Scheduler timer) {
        this.timer = Objects.requireNonNull(timer, "timer");
        return this;
    }

    /**
     * The queue.
     *
     * @throws InvalidConfigException if no configuration was given
     * @throws UnsupportedDialectException if the connection factory is not PostgreSQL
     */
    public ReactiveWorkQueue<K> build() {
        if (config == null) {
            throw new InvalidConfigException("config is required: call config(WorkQueueConfig) before build()");
        }
        KeyCodec<K> codec = keyCodec != null ? keyCodec : KeyCodec.defaultFor(keyType);
        QueueMetrics metrics = meterRegistry == null
                ? QueueMetrics.NONE
                : MicrometerQueueMetrics.forRegistry(meterRegistry, config.name());
        return PostgresWorkQueue.create(connectionFactory, config, codec, wakeups, timer, metrics);
    }
}
