package io.workqueue.spring.boot.autoconfigure;

import io.workqueue.ReactiveWorkQueue;
import java.time.Duration;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * Every {@code workqueue.housekeeping.interval}, for each queue in turn: {@code reap()} (repeated
 * while it deletes a full batch, so a backlog of history drains), {@code stats()} and
 * {@code horizon()}, which also update the queue's Micrometer gauges (horizon() logs a WARN while a
 * transaction holds the database's MVCC horizon past the queue's {@code horizon-warning}). The first round runs at start, so the gauges have values
 * from the beginning; it runs asynchronously and tolerates a database that is not there yet.
 *
 * <p>Failures are logged at WARN and the schedule goes on; a round still running when the next is
 * due makes that one be skipped, never queued. Runs on Reactor's parallel scheduler and the driver's
 * threads, never blocking. Phase {@link WorkQueuePhases#WORKERS}: it stops with the workers, before
 * the queues close. Thread-safe.
 */
final class QueueHousekeeping implements SmartLifecycle {
    private static final Logger log = LoggerFactory.getLogger(QueueHousekeeping.class);
    /** A bound on reaps per queue per round, so one round cannot run forever behind a huge backlog. */
    private static final int MAX_REAPS_PER_ROUND = 100;

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
            schedule = Flux.interval(Duration.ZERO, interval, Schedulers.parallel())
                    .onBackpressureDrop()
                    .concatMap(tick -> round(), 1)
                    .subscribe();
        }
    }

    /** One round over every queue, one after the other. */
    Mono<Void> round() {
        return Flux.fromIterable(queues.entrySet())
                .concatMap(entry -> housekeep(entry.getKey(), entry.getValue())
                        .onErrorResume(error -> {
                            log.warn("housekeeping of queue {} failed; trying again in {}", entry.getKey(),
                                    properties.getHousekeeping().getInterval(), error);
                            return Mono.empty();
                        }))
                .then();
    }

    private Mono<Void> housekeep(String bean, ReactiveWorkQueue<?> queue) {
        WorkQueueProperties.Queue configured = properties.getQueues().get(bean);
        // A queue the application declared itself: its batch size is unknown, so one reap per round.
        int fullBatch = configured != null ? configured.getReapBatchSize() : Integer.MAX_VALUE;
        Mono<Long> reapAll = queue.reap()
                .expand(deleted -> deleted >= fullBatch ? queue.reap() : Mono.empty())
                .take(MAX_REAPS_PER_ROUND)
                .reduce(0L, Long::sum);
        return reapAll.doOnNext(deleted -> {
                    if (deleted > 0) {
                        log.debug("reaped {} completed items of queue {}", deleted, bean);
                    }
                })
                .then(queue.stats())
                .then(queue.horizon())
                .then();
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
