package io.workqueue;

import io.r2dbc.spi.ConnectionFactory;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/**
 * The seam between the API and the storage that implements it: how {@link WorkQueueBuilder} and
 * {@link WorkQueueAdmin.Builder} create a queue and an admin without naming an implementation. The
 * library's PostgreSQL backend provides it, found with {@link java.util.ServiceLoader} (a
 * {@code META-INF/services} entry, or a {@code provides} clause of a module).
 *
 * <p>A service provider interface, not for applications: nothing here is needed to use a queue.
 * An implementation must be thread-safe and have a public no-argument constructor.
 */
public interface WorkQueueBackend {
    /**
     * A queue over {@code connectionFactory}, as {@link WorkQueueBuilder#build()} describes, from
     * settings the builder has already checked.
     *
     * @param connectionFactory the factory statements borrow connections from
     * @param config            the queue's configuration
     * @param codec             the key codec
     * @param wakeups           the wakeup source, or {@code null} for none
     * @param timer             the scheduler for the queue's timers
     * @param meterRegistry     a Micrometer {@code MeterRegistry}, or {@code null} to record
     *                          nothing; typed {@code Object} so that Micrometer stays optional
     * @param <K>               the key type
     * @return the queue
     * @throws UnsupportedDialectException if the factory is not of this backend's database
     */
    <K> ReactiveWorkQueue<K> queue(ConnectionFactory connectionFactory, WorkQueueConfig config, KeyCodec<K> codec,
            @Nullable Publisher<?> wakeups, Scheduler timer, @Nullable Object meterRegistry);

    /**
     * A queue as {@link #queue(ConnectionFactory, WorkQueueConfig, KeyCodec, Publisher, Scheduler, Object)}
     * makes it, observed through {@code observationRegistry}. The default, for backends that make
     * no observations, ignores the registry.
     *
     * @param connectionFactory   the factory statements borrow connections from
     * @param config              the queue's configuration
     * @param codec               the key codec
     * @param wakeups             the wakeup source, or {@code null} for none
     * @param timer               the scheduler for the queue's timers
     * @param meterRegistry       a Micrometer {@code MeterRegistry}, or {@code null} to record nothing
     * @param observationRegistry a Micrometer {@code ObservationRegistry}, or {@code null} to observe
     *                            nothing; typed {@code Object} so that Micrometer stays optional
     * @param <K>                 the key type
     * @return the queue
     * @throws UnsupportedDialectException if the factory is not of this backend's database
     */
    default <K> ReactiveWorkQueue<K> queue(ConnectionFactory connectionFactory, WorkQueueConfig config,
            KeyCodec<K> codec, @Nullable Publisher<?> wakeups, Scheduler timer, @Nullable Object meterRegistry,
            @Nullable Object observationRegistry) {
        return queue(connectionFactory, config, codec, wakeups, timer, meterRegistry);
    }

    /**
     * The backend the builders and {@link io.workqueue.migrations.WorkQueueMigrations} use: the
     * first provider {@link java.util.ServiceLoader} finds beside the API, looked up once.
     *
     * @return the backend
     * @throws IllegalStateException if none is on the class path (an incomplete jar)
     */
    static WorkQueueBackend installed() {
        return Backends.BACKEND;
    }

    /**
     * The schema version of the table of {@code tablePrefix}, as
     * {@link io.workqueue.migrations.WorkQueueMigrations#version(ConnectionFactory, String)}
     * describes it. The default, for backends without migrations, fails with
     * {@code UnsupportedOperationException} at subscription.
     *
     * @param connectionFactory where to read the catalog
     * @param tablePrefix       the valid table prefix
     * @return a cold {@code Mono} of the version: 0 when there is no such table
     */
    default Mono<Integer> schemaVersion(ConnectionFactory connectionFactory, String tablePrefix) {
        return Mono.error(() -> new UnsupportedOperationException(getClass().getName() + " has no migrations"));
    }

    /**
     * Brings the table of {@code tablePrefix} to schema version {@code version} with
     * {@code statements}, as {@link io.workqueue.migrations.WorkQueueMigrations#apply(ConnectionFactory, String)}
     * describes it: in one transaction, serialised with every other apply of that table, and not
     * at all when the table is at that version or later. Cancelling it stops its statement on the
     * server. The default fails with {@code UnsupportedOperationException} at subscription.
     *
     * @param connectionFactory where to create the table
     * @param tablePrefix       the valid table prefix
     * @param statements        the DDL, in order, each idempotent
     * @param version           the version the statements bring the table to
     * @return a cold {@code Mono} that completes once the table is current
     */
    default Mono<Void> applySchema(ConnectionFactory connectionFactory, String tablePrefix, List<String> statements,
            int version) {
        return Mono.error(() -> new UnsupportedOperationException(getClass().getName() + " has no migrations"));
    }

    /**
     * An admin over the table of {@code tablePrefix}, as {@link WorkQueueAdmin.Builder#build()}
     * describes, from settings the builder has already checked.
     *
     * @param connectionFactory the factory statements borrow connections from
     * @param tablePrefix       the valid prefix of the table to read
     * @param queues            the queues registered with the builder, in registration order
     * @param writeAttempts     runs of an action PostgreSQL asks to retry; at least 1
     * @return the admin
     * @throws InvalidConfigException if a queue is of another table or registered twice
     * @throws UnsupportedDialectException if the factory is not of this backend's database
     */
    WorkQueueAdmin admin(ConnectionFactory connectionFactory, String tablePrefix, List<AdminQueue> queues,
            int writeAttempts);

    /**
     * One queue registered with a {@link WorkQueueAdmin.Builder}: a queue instance, or a
     * configuration with an optional codec.
     */
    final class AdminQueue {
        private final @Nullable ReactiveWorkQueue<?> queue;
        private final @Nullable WorkQueueConfig config;
        private final @Nullable KeyCodec<?> codec;

        private AdminQueue(@Nullable ReactiveWorkQueue<?> queue, @Nullable WorkQueueConfig config,
                @Nullable KeyCodec<?> codec) {
            this.queue = queue;
            this.config = config;
            this.codec = codec;
        }

        /**
         * A queue registered as an instance.
         *
         * @param queue the queue
         * @return the registration
         */
        public static AdminQueue of(ReactiveWorkQueue<?> queue) {
            return new AdminQueue(Objects.requireNonNull(queue, "queue"), null, null);
        }

        /**
         * A queue registered by its configuration.
         *
         * @param config its configuration
         * @param codec  its key codec, or {@code null} to show keys as stored
         * @return the registration
         */
        public static AdminQueue of(WorkQueueConfig config, @Nullable KeyCodec<?> codec) {
            return new AdminQueue(null, Objects.requireNonNull(config, "config"), codec);
        }

        /** {@return the queue instance, or {@code null} when registered by configuration} */
        public @Nullable ReactiveWorkQueue<?> queue() {
            return queue;
        }

        /** {@return the configuration, or {@code null} when registered as an instance} */
        public @Nullable WorkQueueConfig config() {
            return config;
        }

        /** {@return the key codec given with the configuration, or {@code null}} */
        public @Nullable KeyCodec<?> codec() {
            return codec;
        }
    }
}
