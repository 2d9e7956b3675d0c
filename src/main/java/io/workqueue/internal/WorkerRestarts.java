package io.workqueue.internal;

import io.workqueue.WorkerOptions;
import io.workqueue.internal.base.Durations;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;
import reactor.util.retry.Retry;

/**
 * A worker started again after its stream ends on an error, as {@link WorkerOptions#restartBackoff()}
 * describes: the restart rule of {@code process}, for every user rather than only the starter's.
 *
 * <p>A graceful stop must reach every incarnation, including one started after the stop was
 * signalled, while the caller's stop publisher is subscribed once: so it is watched once per
 * subscription, and each worker gets a replaying view of it.
 */
public final class WorkerRestarts {
    private static final Logger log = LoggerFactory.getLogger(WorkerRestarts.class);

    private WorkerRestarts() {}

    /**
     * The items {@code worker} completes, restarted on error when {@code options} ask for it.
     *
     * @param options the worker's options: their restart back-off decides
     * @param queue   the queue's name, for the warning
     * @param handler the handler, named in the warning by its {@code toString()}
     * @param timer   where back-off delays elapse
     * @param stop    the caller's graceful stop, or {@code null} for none
     * @param worker  one worker, stopping on the stop it is given ({@code Mono.never()} for none)
     * @return a cold {@code Flux}: each subscription runs its own workers, one at a time
     */
    public static <T> Flux<T> of(WorkerOptions options, String queue, Object handler, Scheduler timer,
            @Nullable Publisher<?> stop, Function<Publisher<?>, Flux<T>> worker) {
        Duration first = options.restartBackoff().orElse(null);
        if (first == null) {
            return worker.apply(stop == null ? Mono.never() : stop);
        }
        Duration max = options.maxRestartBackoff();
        return Flux.defer(() -> {
            Sinks.Empty<Void> stopped = Sinks.empty();
            AtomicBoolean stopping = new AtomicBoolean();
            Runnable stopNow = () -> {
                stopping.set(true);
                stopped.tryEmitEmpty();
            };
            Disposable watch = stop == null ? null
                    : Mono.from(stop).subscribe(any -> stopNow.run(), error -> stopNow.run(), stopNow);
            Mono<Void> stopSignal = stopped.asMono();
            Retry restarts = Retry.from(failures -> failures.concatMap(failure -> {
                if (stopping.get()) {
                    // Stopping: nothing to restart for, and the error is the stop's outcome.
                    return Mono.error(failure.failure());
                }
                long inARow = failure.totalRetriesInARow() + 1;
                log.warn("worker of queue {} (handler {}) ended on an error; restarting it after a back-off"
                        + " (restart {} in a row)", queue, handler, inARow, failure.failure());
                Duration delay = spread(Durations.doubled((int) Math.min(inARow, 64), first, max));
                // A stop during the back-off starts the next worker at once, already stopped: it
                // ends at once, and the stream with it, without waiting out the delay.
                return Mono.firstWithSignal(Mono.delay(delay, timer).then(), stopSignal).thenReturn(inARow);
            }));
            Flux<T> workers = Flux.defer(() -> worker.apply(stopSignal)).retryWhen(restarts);
            return watch == null ? workers : workers.doFinally(signal -> watch.dispose());
        });
    }

    /** Between half of {@code delay} and all of it, at random, so that a fleet does not restart in step. */
    private static Duration spread(Duration delay) {
        return delay.minus(delay.dividedBy(2).multipliedBy(ThreadLocalRandom.current().nextInt(1001)).dividedBy(1000));
    }
}
