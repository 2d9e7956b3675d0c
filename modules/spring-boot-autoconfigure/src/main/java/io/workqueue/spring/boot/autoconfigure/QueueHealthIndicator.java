package io.workqueue.spring.boot.autoconfigure;

import io.workqueue.ReactiveWorkQueue;
import io.workqueue.Stats;
import java.time.Duration;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.ReactiveHealthIndicator;
import reactor.core.publisher.Mono;

/**
 * The health of one queue: UP while no item has been ready for longer than
 * {@code max-oldest-ready-age}; DOWN when one has (the queue is stuck or its workers cannot keep
 * up: depth alone cannot tell a deep moving queue from a deep stuck one), or when the check fails
 * or outlasts {@code workqueue.health.timeout} (the database is unreachable).
 *
 * <p>Cost: a healthy check is one {@link ReactiveWorkQueue#readyLongerThan(Duration)} probe, a few
 * index pages whatever the history and the backlog, so probes from every pod of a fleet cost the
 * database next to nothing. Only a DOWN check then reads {@code stats()} too (bounded by the
 * backlog), for details that say why.
 *
 * <p>A queue an operator paused ({@code WorkQueueAdmin.pause}) is UP whatever its age, with
 * {@code paused} true and {@code pausedAt}: its items wait by design, and a readiness probe must
 * not take the fleet out of service for it.
 *
 * <p>Details: {@code queue} (the logical name) and {@code maxOldestReadyAge}; when DOWN because an
 * item is late, also {@code depth} (items not completed), {@code ready}, {@code leased},
 * {@code stalled}, {@code completed} (counted up to {@link Stats#COMPLETED_COUNT_LIMIT}; then
 * {@code completedCapped} is true) and {@code oldestReadyAge} (ISO-8601 durations). The queue's
 * gauges come from housekeeping, not from here. Immutable and thread-safe.
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
     * Checks the queue once per subscription (cold) and maps the answer to UP or DOWN; never
     * signals an error, since a failed or late check is itself the answer (DOWN, with the
     * exception). The timeout covers the probe and, when DOWN, the stats read. Emits on a driver
     * thread, or on Reactor's parallel scheduler when the timeout fires; cancelling abandons the
     * check (its statement is cancelled on the server).
     */
    @Override
    public Mono<Health> health() {
        return queue.readyLongerThan(maxOldestReadyAge)
                .flatMap(late -> late ? queue.stats().map(this::late) : Mono.just(healthy()))
                .timeout(timeout)
                .onErrorResume(error -> Mono.just(Health.down(error)
                        .withDetail("queue", queue.name())
                        .build()));
    }

    private Health healthy() {
        return Health.up()
                .withDetail("queue", queue.name())
                .withDetail("maxOldestReadyAge", maxOldestReadyAge.toString())
                .build();
    }

    private Health late(Stats stats) {
        if (stats.paused()) {
            // Paused on purpose: its ready items wait by design, so the age is no alarm.
            return Health.up()
                    .withDetail("queue", queue.name())
                    .withDetail("paused", true)
                    .withDetail("pausedAt", stats.pausedAt().orElseThrow().toString())
                    .withDetail("depth", stats.pending())
                    .withDetail("ready", stats.ready())
                    .withDetail("oldestReadyAge", stats.oldestReadyAge().toString())
                    .build();
        }
        return Health.down()
                .withDetail("queue", queue.name())
                .withDetail("maxOldestReadyAge", maxOldestReadyAge.toString())
                .withDetail("depth", stats.pending())
                .withDetail("ready", stats.ready())
                .withDetail("leased", stats.leased())
                .withDetail("stalled", stats.stalled())
                .withDetail("completed", stats.completed())
                .withDetail("completedCapped", stats.completedCapped())
                .withDetail("oldestReadyAge", stats.oldestReadyAge().toString())
                .build();
    }
}
