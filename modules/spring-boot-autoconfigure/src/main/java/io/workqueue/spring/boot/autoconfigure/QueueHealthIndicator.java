package io.workqueue.spring.boot.autoconfigure;

import io.workqueue.ReactiveWorkQueue;
import io.workqueue.Stats;
import java.time.Duration;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.ReactiveHealthIndicator;
import reactor.core.publisher.Mono;

/**
 * The health of one queue, from one {@code stats()} read: UP while the oldest ready item has waited
 * at most {@code max-oldest-ready-age}; DOWN when it has waited longer (the queue is stuck or its
 * workers cannot keep up: depth alone cannot tell a deep moving queue from a deep stuck one), or
 * when the read fails or outlasts {@code workqueue.health.timeout} (the database is unreachable).
 *
 * <p>Details: {@code queue} (the logical name), {@code depth} (items not completed), {@code ready},
 * {@code leased}, {@code stalled}, {@code completed}, {@code oldestReadyAge} and
 * {@code maxOldestReadyAge} (ISO-8601 durations). Each check costs one statement and also updates
 * the queue's gauges. Immutable and thread-safe.
 */
public final class QueueHealthIndicator implements ReactiveHealthIndicator {
    private final ReactiveWorkQueue<?> queue;
    private final Duration maxOldestReadyAge;
    private final Duration timeout;

    /**
     * @param queue             the queue to read
     * @param maxOldestReadyAge how long the oldest ready item may wait before the queue is DOWN
     * @param timeout           how long the read may take before the queue is DOWN
     */
    public QueueHealthIndicator(ReactiveWorkQueue<?> queue, Duration maxOldestReadyAge, Duration timeout) {
        this.queue = queue;
        this.maxOldestReadyAge = maxOldestReadyAge;
        this.timeout = timeout;
    }

    /**
     * Reads the queue's stats once per subscription (cold) and maps them to UP or DOWN; never
     * signals an error, since a failed or late read is itself the answer (DOWN, with the exception).
     * Emits on a driver thread, or on Reactor's parallel scheduler when the timeout fires;
     * cancelling abandons the read (the statement may still finish on the server).
     */
    @Override
    public Mono<Health> health() {
        return queue.stats()
                .timeout(timeout)
                .map(this::assess)
                .onErrorResume(error -> Mono.just(Health.down(error)
                        .withDetail("queue", queue.name())
                        .build()));
    }

    private Health assess(Stats stats) {
        Health.Builder health = stats.oldestReadyAge().compareTo(maxOldestReadyAge) > 0 ? Health.down() : Health.up();
        return health.withDetail("queue", queue.name())
                .withDetail("depth", stats.pending())
                .withDetail("ready", stats.ready())
                .withDetail("leased", stats.leased())
                .withDetail("stalled", stats.stalled())
                .withDetail("completed", stats.completed())
                .withDetail("oldestReadyAge", stats.oldestReadyAge().toString())
                .withDetail("maxOldestReadyAge", maxOldestReadyAge.toString())
                .build();
    }
}
