package io.workqueue.spring.boot.console;

import io.workqueue.QueueSummary;
import io.workqueue.WorkQueueAdmin;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;

/**
 * The queue list of one table as the console shows it: the admin's {@link WorkQueueAdmin#queues()}
 * (each queue's own stats read), read at most once per {@code maxAge} however many people look.
 * A view of a stale list gets it at once while one refresh runs in the background; only the first
 * view waits for a read. Each stats read scans its queue, so this keeps what the console costs the
 * database independent of how often anybody reloads it. Thread-safe.
 */
final class ConsoleStats {
    private static final Logger log = LoggerFactory.getLogger(ConsoleStats.class);

    /** A list of queues and when it was read ({@code System.nanoTime()}). */
    record Snapshot(List<QueueSummary> queues, long readAtNanos) {
        Duration age() {
            return Duration.ofNanos(System.nanoTime() - readAtNanos);
        }
    }

    private final WorkQueueAdmin admin;
    private final Duration maxAge;
    private final AtomicReference<@Nullable Snapshot> last = new AtomicReference<>();
    private final AtomicBoolean refreshing = new AtomicBoolean();

    ConsoleStats(WorkQueueAdmin admin, Duration maxAge) {
        this.admin = admin;
        this.maxAge = maxAge;
    }

    /**
     * The latest list: at once when one was read, refreshing it in the background when older than
     * the maximum age; else (a first view) when its own read completes. Cold.
     */
    Mono<Snapshot> current() {
        return Mono.defer(() -> {
            Snapshot snapshot = last.get();
            if (snapshot == null) {
                return Mono.defer(() -> admin.queues().collectList())
                        .map(queues -> new Snapshot(queues, System.nanoTime()))
                        .doOnNext(last::set);
            }
            if (snapshot.age().compareTo(maxAge) > 0 && refreshing.compareAndSet(false, true)) {
                admin.queues().collectList()
                        .doFinally(signal -> refreshing.set(false))
                        .subscribe(queues -> last.set(new Snapshot(queues, System.nanoTime())),
                                error -> log.warn("refreshing the console's queue list of table prefix \"{}\" failed",
                                        admin.tablePrefix(), error));
            }
            return Mono.just(snapshot);
        });
    }

    /** Forgets nothing, but makes the next view refresh: after an action changed counts. */
    void invalidate() {
        Snapshot snapshot = last.get();
        if (snapshot != null) {
            last.compareAndSet(snapshot, new Snapshot(snapshot.queues(), snapshot.readAtNanos() - maxAge.toNanos() - 1));
        }
    }
}
