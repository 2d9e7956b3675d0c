package io.workqueue.internal;

import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkerOptions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.FluxSink;
import reactor.core.publisher.Mono;
import reactor.core.publisher.SignalType;
import reactor.core.scheduler.Scheduler;

/**
 * The loop behind {@code process}: lease up to the free handler slots, run the handler on each
 * item, and acknowledge successes in the next round's {@code completeAndClaim}, so a busy worker
 * pays one statement per round for completing and claiming together.
 *
 * <p>Rounds never overlap: at most one statement (or wait, or back-off) is in flight per
 * subscription. A round starts when there are free slots and downstream still wants completed
 * items, or when finished items wait for acknowledgement. After a short claim the worker waits for
 * work; a handler finishing ends that wait, since its acknowledgement is due. Failures are released
 * with the options' back-off and the error as cause. Transient database errors back off and retry,
 * keeping the unacknowledged items; other errors terminate the stream (unacknowledged items then
 * lapse and are handed out again).
 *
 * <p>Cancellation stops claiming; handlers already running are not cancelled, and what they
 * finish is still completed. Items leased by a round in flight at cancellation are released
 * at once.
 *
 * @param <K> the key type
 */
public final class Worker<K> {
    private static final Logger log = LoggerFactory.getLogger(Worker.class);
    private static final Duration MIN_BACKOFF = Duration.ofMillis(100);
    private static final Duration MAX_BACKOFF = Duration.ofSeconds(5);

    private final ReactiveWorkQueue<K> queue;
    private final Function<Item<K>, ? extends Publisher<?>> handler;
    private final WorkerOptions options;
    private final Scheduler timer;

    /** A worker over {@code queue}; nothing runs until {@link #flux()} is subscribed. */
    public Worker(ReactiveWorkQueue<K> queue, Function<Item<K>, ? extends Publisher<?>> handler,
            WorkerOptions options, Scheduler timer) {
        this.queue = queue;
        this.handler = handler;
        this.options = options;
        this.timer = timer;
    }

    /** Cold: each subscription runs its own worker, emitting each item once it is completed. */
    public Flux<Item<K>> flux() {
        return Flux.create(sink -> new Loop(sink).start(), FluxSink.OverflowStrategy.BUFFER);
    }

    private final class Loop {
        private final FluxSink<Item<K>> sink;
        private final AtomicInteger wip = new AtomicInteger();
        private final AtomicInteger running = new AtomicInteger();
        private final Queue<Item<K>> finished = new ConcurrentLinkedQueue<>();
        private volatile boolean roundInFlight;
        /** Cancelled, or terminated by an error: claim nothing more, still acknowledge what finishes. */
        private volatile boolean cancelled;
        /** An idle wait or a back-off in progress; assigned before it is subscribed. */
        private volatile @Nullable Disposable pause;
        /** Whether {@link #pause} is a back-off, which nothing cuts short. */
        private volatile boolean backingOff;
        private int failures;

        Loop(FluxSink<Item<K>> sink) {
            this.sink = sink;
        }

        void start() {
            sink.onRequest(n -> drain());
            sink.onCancel(() -> {
                cancelled = true;
                endPause();
                drain();
            });
            drain();
        }

        private void drain() {
            if (wip.getAndIncrement() != 0) {
                return;
            }
            do {
                if (!roundInFlight) {
                    startRoundIfDue();
                }
            } while (wip.decrementAndGet() != 0);
        }

        private void startRoundIfDue() {
            if (backingOff) {
                return;
            }
            int free = options.concurrency() - running.get();
            boolean claim = !cancelled && free > 0 && sink.requestedFromDownstream() > 0;
            // While idle-waiting only an acknowledgement starts a round; it then claims too.
            if (finished.isEmpty() && (!claim || pause != null)) {
                return;
            }
            endPause();
            List<Item<K>> acks = new ArrayList<>();
            for (Item<K> item; (item = finished.poll()) != null; ) {
                acks.add(item);
            }
            List<K> keys = acks.stream().map(Item::key).toList();
            roundInFlight = true;
            if (!claim) {
                queue.complete(keys).subscribe(
                        count -> {},
                        error -> roundFailed(acks, error),
                        () -> roundDone(acks, List.of(), false));
                return;
            }
            int limit = Math.min(free, options.claimBatch());
            queue.completeAndClaim(keys, limit, options.lease()).subscribe(
                    items -> roundDone(acks, items, items.size() < limit),
                    error -> roundFailed(acks, error));
        }

        private void roundDone(List<Item<K>> acks, List<Item<K>> leased, boolean shortClaim) {
            failures = 0;
            if (!cancelled) {
                acks.forEach(sink::next);
            }
            if (cancelled && !leased.isEmpty()) {
                // Cancelled while the claim ran: hand these back now rather than let them lapse.
                queue.release(Duration.ZERO, null, leased.stream().map(Item::key).toList())
                        .subscribe(null, e -> log.warn("releasing items after cancellation failed; they will lapse", e));
            } else {
                leased.forEach(this::handle);
            }
            if (shortClaim && !cancelled) {
                pauseFor(queue.awaitWork(options.poll()));
            }
            roundInFlight = false;
            drain();
        }

        private void roundFailed(List<Item<K>> acks, Throwable error) {
            if (!SqlStates.isTransient(error)) {
                cancelled = true;
                roundInFlight = false;
                sink.error(error);
                return;
            }
            finished.addAll(acks); // acknowledge them next round
            failures++;
            Duration delay = Backoff.jittered(failures, MIN_BACKOFF, MAX_BACKOFF);
            log.warn("worker round on queue {} failed (attempt {}); retrying in {} ms: {}",
                    queue.name(), failures, delay.toMillis(), error.toString());
            backingOff = true;
            pauseFor(Mono.delay(delay, timer));
            roundInFlight = false;
        }

        private void handle(Item<K> item) {
            running.incrementAndGet();
            Mono<Void> work;
            try {
                work = Flux.from(handler.apply(item)).then();
            } catch (RuntimeException e) {
                work = Mono.error(e);
            }
            work.subscribe(
                    null,
                    error -> queue.release(options.backoff().apply(item.attempts()), error, List.of(item.key()))
                            .subscribe(
                                    count -> {},
                                    releaseError -> {
                                        log.warn("releasing {} on queue {} failed; its lease will lapse",
                                                item.key(), queue.name(), releaseError);
                                        handlerDone();
                                    },
                                    this::handlerDone),
                    () -> {
                        finished.add(item);
                        handlerDone();
                    });
        }

        private void handlerDone() {
            running.decrementAndGet();
            drain();
        }

        /** Pauses until {@code wait} ends, then resumes; a pause that was cut short resumes nothing. */
        private void pauseFor(Mono<?> wait) {
            BaseSubscriber<Object> subscriber = new BaseSubscriber<>() {
                @Override
                protected void hookOnError(Throwable error) {
                    // A failed wait only ends the wait; the next round will meet any real problem.
                }

                @Override
                protected void hookFinally(SignalType type) {
                    if (type != SignalType.CANCEL && pause == this) {
                        pause = null;
                        backingOff = false;
                        drain();
                    }
                }
            };
            pause = subscriber;
            wait.subscribe(subscriber);
        }

        private void endPause() {
            Disposable current = pause;
            if (current != null) {
                pause = null;
                backingOff = false;
                current.dispose();
            }
        }
    }
}
