package io.workqueue.spring.boot.autoconfigure;

import io.workqueue.ReactiveWorkQueue;
import java.time.Duration;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.context.SmartLifecycle;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;

/**
 * Every queue's {@link ReactiveWorkQueue#housekeeping(Duration)} loop, every
 * {@code workqueue.housekeeping.interval}: one instance of the fleet per queue (chosen on the
 * database) reaps until short, reads {@code stats()} and {@code horizon()} and publishes the
 * reading; every other instance sets its gauges from that reading, so housekeeping costs the
 * database the same for one instance or fifty. The keeper logs the held-horizon WARN past the
 * queue's {@code horizon-warning}. The first round runs at start, so the gauges have values from
 * the beginning; it runs asynchronously and tolerates a database that is not there yet.
 *
 * <p>Failures are logged at WARN by the loop and it goes on; a round still running when the next
 * is due delays it, never queues it. Runs on Reactor's parallel scheduler and the driver's
 * threads, never blocking. Phase {@link WorkQueuePhases#WORKERS}: it stops with the workers, before
 * the queues close. Thread-safe.
 */
final class QueueHousekeeping implements SmartLifecycle {
    private final Map<String, ReactiveWorkQueue<?>> queues;
    private final WorkQueueProperties properties;
    private final Object lock = new Object();
    private @Nullable Disposable schedule; // guarded by lock

    QueueHousekeeping(Map<String, ReactiveWorkQueue<?>> queues, WorkQueueProperties properties) {
        this.queues = queues;
        this.properties = properties;
    }

    @Override
    public void start() {
        synchronized (lock) {
            if (schedule != null) {
                return;
            }
            Duration interval = properties.getHousekeeping().getInterval();
            schedule = Flux.fromIterable(queues.values())
                    .flatMap(queue -> queue.housekeeping(interval), Math.max(1, queues.size()))
                    .subscribe();
        }
    }

    @Override
    public void stop() {
        synchronized (lock) {
            if (schedule != null) {
                schedule.dispose();
                schedule = null;
            }
        }
    }

    @Override
    public boolean isRunning() {
        synchronized (lock) {
            return schedule != null;
        }
    }

    @Override
    public int getPhase() {
        return WorkQueuePhases.WORKERS;
    }
}
