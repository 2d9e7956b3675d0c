package io.workqueue.internal;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntFunction;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.jspecify.annotations.Nullable;
import reactor.core.Disposable;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.FluxSink;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/**
 * The loop behind {@code claimStream}: claim as much as downstream has asked for and not yet
 * received, emit it, and when a claim comes back short, wait for work before claiming again.
 *
 * <p>At most one claim or wait is in flight per subscription, so the outstanding demand read before
 * a claim cannot be overtaken by emissions; nothing is ever leased ahead of demand, and a slow
 * consumer holds no leases in a buffer. Transient failures (see {@link SqlStates#isTransient}) back
 * off exponentially between {@code minBackoff} and {@code maxBackoff} with jitter, reset by the
 * next successful claim; any other failure terminates the stream.
 *
 * @param <T> the item type
 */
public final class DemandPacedClaims<T> {
    private static final Logger log = LoggerFactory.getLogger(DemandPacedClaims.class);

    private final String name;
    private final int maxBatch;
    private final IntFunction<Mono<List<T>>> claim;
    private final Supplier<Mono<Void>> awaitWork;
    private final Duration minBackoff;
    private final Duration maxBackoff;
    private final Scheduler timer;

    /**
     * @param name       names the queue in logs
     * @param maxBatch   the most one claim may ask for
     * @param claim      leases up to the given number of items
     * @param awaitWork  completes when it is worth claiming again after a short batch
     * @param minBackoff first delay after a transient failure
     * @param maxBackoff the delay never grows beyond this
     * @param timer      the scheduler for back-off delays
     */
    public DemandPacedClaims(String name, int maxBatch, IntFunction<Mono<List<T>>> claim,
            Supplier<Mono<Void>> awaitWork, Duration minBackoff, Duration maxBackoff, Scheduler timer) {
        this.name = name;
        this.maxBatch = maxBatch;
        this.claim = claim;
        this.awaitWork = awaitWork;
        this.minBackoff = minBackoff;
        this.maxBackoff = maxBackoff;
        this.timer = timer;
    }

    /** A cold, endless stream; each subscription runs its own loop. */
    public Flux<T> flux() {
        return Flux.create(sink -> new Loop(sink).start(), FluxSink.OverflowStrategy.ERROR);
    }

    /** One subscription's state. */
    private final class Loop {
        private final FluxSink<T> sink;
        private final AtomicInteger wip = new AtomicInteger();
        /** The claim or pause in flight; assigned before it is subscribed, so nested steps win. */
        private volatile @Nullable Disposable step;
        private volatile boolean busy;
        private int failures;

        Loop(FluxSink<T> sink) {
            this.sink = sink;
        }

        void start() {
            sink.onRequest(n -> drain());
            sink.onDispose(() -> {
                Disposable current = step;
                if (current != null) {
                    current.dispose();
                }
            });
        }

        /** Starts a claim if none is running and there is demand; safe to call from any thread. */
        private void drain() {
            if (wip.getAndIncrement() != 0) {
                return;
            }
            do {
                if (!busy && !sink.isCancelled() && sink.requestedFromDownstream() > 0) {
                    busy = true;
                    int want = (int) Math.min(sink.requestedFromDownstream(), maxBatch);
                    run(claim.apply(want).map(items -> () -> onClaimed(items, want)));
                }
            } while (wip.decrementAndGet() != 0);
        }

        private void onClaimed(List<T> items, int wanted) {
            failures = 0;
            log.debug("claim on queue {} asked for {} and leased {}", name, wanted, items.size());
            items.forEach(sink::next);
            if (items.size() < wanted) {
                run(awaitWork.get().thenReturn(this::idle));
            } else {
                idle();
            }
        }

        private void onError(Throwable error) {
            if (!SqlStates.isTransient(error)) {
                sink.error(error);
                return;
            }
            failures++;
            Duration delay = backoff(failures);
            log.warn("claim on queue {} failed (attempt {}); retrying in {} ms: {}",
                    name, failures, delay.toMillis(), error.toString());
            run(Mono.delay(delay, timer).thenReturn(this::idle));
        }

        private void idle() {
            busy = false;
            drain();
        }

        /**
         * Runs one step, tracked for cancellation. The step emits what to do next, so a step that
         * completes synchronously still runs its continuation after {@code step} was assigned.
         */
        private void run(Mono<Runnable> next) {
            BaseSubscriber<Runnable> subscriber = new BaseSubscriber<>() {
                @Override
                protected void hookOnNext(Runnable continuation) {
                    continuation.run();
                }

                @Override
                protected void hookOnError(Throwable error) {
                    // Qualified: a bare onError(error) here is BaseSubscriber.onError, which drops it.
                    Loop.this.onError(error);
                }
            };
            step = subscriber;
            next.subscribe(subscriber);
            if (sink.isCancelled()) {
                subscriber.dispose();
            }
        }

        private Duration backoff(int attempt) {
            long min = minBackoff.toMillis();
            long ceiling = Math.min(maxBackoff.toMillis(), min << Math.min(attempt - 1, 20));
            // Full jitter over the upper half keeps a restarted fleet from claiming in lockstep.
            long jittered = ceiling / 2 + (long) (Math.random() * (ceiling / 2 + 1));
            return Duration.ofMillis(Math.max(min, jittered));
        }
    }
}
