package io.workqueue.spring.boot.autoconfigure;

import io.workqueue.notify.PgNotificationListener;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * One {@link PgNotificationListener} per notify channel, shared by every queue on that channel.
 * A listener connects only when a queue first waits for work, so creating one touches no database.
 * Thread-safe.
 */
final class NotificationListeners {
    private final WorkQueueConnectionFactories connections;
    private final WorkQueueProperties.Listener settings;
    private final Map<String, PgNotificationListener> byChannel = new LinkedHashMap<>();

    NotificationListeners(WorkQueueConnectionFactories connections, WorkQueueProperties.Listener settings) {
        this.connections = connections;
        this.settings = settings;
    }

    /** The wakeups of the listener on {@code channel}, creating it on first use. */
    synchronized Flux<Object> wakeups(String channel) {
        return byChannel.computeIfAbsent(channel, this::create).wakeups();
    }

    private PgNotificationListener create(String channel) {
        return PgNotificationListener.builder(connections.listener())
                .channel(channel)
                .reconnectBackoff(settings.getReconnectBackoff(), settings.getMaxReconnectBackoff())
                .healthCheck(settings.getHealthCheckInterval(), settings.getHealthCheckTimeout())
                .build();
    }

    /** Closes every listener (each releases its connection); completes when all have. Idempotent. */
    Mono<Void> close() {
        List<PgNotificationListener> listeners;
        synchronized (this) {
            listeners = new ArrayList<>(byChannel.values());
        }
        return Flux.fromIterable(listeners).flatMap(PgNotificationListener::close).then();
    }
}
