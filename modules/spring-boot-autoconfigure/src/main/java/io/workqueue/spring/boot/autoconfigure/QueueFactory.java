package io.workqueue.spring.boot.autoconfigure;

import io.workqueue.KeyCodec;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueBuilder;
import io.workqueue.WorkQueueConfig;
import io.workqueue.spring.boot.WorkQueueBuilderCustomizer;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.ObjectProvider;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import tools.jackson.databind.json.JsonMapper;

/**
 * Builds the queue beans configured under {@code workqueue.queues}, and remembers them so that
 * shutdown closes exactly what the starter created (a queue bean the application declares itself
 * is the application's to close). Building a queue opens no connection. Thread-safe.
 */
final class QueueFactory {
    private final WorkQueueProperties properties;
    private final WorkQueueConnectionFactories connections;
    private final NotificationListeners listeners;
    private final ObjectProvider<WorkQueueBuilderCustomizer> customizers;
    private final ObjectProvider<JsonMapper> jsonMappers;
    private final List<ReactiveWorkQueue<?>> created = new CopyOnWriteArrayList<>();

    /**
     * @param jsonMappers the application's Jackson {@code JsonMapper}, if it has exactly one: JSON keys
     *                    are written with what it knows about types (see {@link #build})
     * @param schema      present when {@code workqueue.schema.apply} is set: asking for it here makes
     *                    every queue bean wait until the tables exist
     */
    QueueFactory(WorkQueueProperties properties, WorkQueueConnectionFactories connections,
            NotificationListeners listeners, ObjectProvider<WorkQueueBuilderCustomizer> customizers,
            ObjectProvider<JsonMapper> jsonMappers, @Nullable SchemaInitializer schema) {
        this.properties = properties;
        this.connections = connections;
        this.listeners = listeners;
        this.customizers = customizers;
        this.jsonMappers = jsonMappers;
    }

    /** The queue configured as {@code workqueue.queues.<bean>}. */
    ReactiveWorkQueue<?> create(String bean) {
        WorkQueueProperties.Queue queue = properties.getQueues().get(bean);
        if (queue == null) {
            throw new IllegalStateException("no workqueue.queues." + bean + " is configured");
        }
        return build(bean, queue.getKeyType(), QueueSettings.configOf(properties, bean, queue));
    }

    /**
     * Builds one queue. Its default key codec follows the application's JSON configuration: with a
     * {@code JsonMapper} bean (Spring Boot's Jackson auto-configuration makes one), records and
     * classes are written through {@link KeyCodec#defaultFor(Class, JsonMapper)}, so any type the
     * application taught Jackson (modules, mix-ins) may be part of a key, while the settings that
     * would change a stored key's text ({@code spring.jackson.*} naming, inclusion, date formats,
     * features) do not apply. A customizer's own {@code keyCodec} still wins.
     */
    private <K> ReactiveWorkQueue<K> build(String bean, Class<K> keyType, WorkQueueConfig config) {
        WorkQueueBuilder<K> builder = ReactiveWorkQueue.builder(connections.statements(), keyType).config(config);
        JsonMapper json = jsonMappers.getIfUnique();
        if (json != null) {
            builder.keyCodec(KeyCodec.defaultFor(keyType, json));
        }
        if (!config.notifyChannel().isEmpty()) {
            builder.wakeups(listeners.wakeups(config.notifyChannel()));
        }
        customizers.orderedStream().forEach(customizer -> customizer.customize(bean, builder));
        ReactiveWorkQueue<K> queue = builder.build();
        created.add(queue);
        return queue;
    }

    /**
     * Closes every queue created here: each flushes its pending enqueues and completes, then refuses
     * new enqueues. Completes when all have flushed; a failed flush is logged by the queue and does
     * not stop the others.
     */
    Mono<Void> closeAll() {
        return Flux.fromIterable(created)
                .flatMap(queue -> queue.close().onErrorResume(error -> Mono.empty()))
                .then();
    }
}
