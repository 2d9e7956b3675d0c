package io.workqueue.internal;

import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkerOptions;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.FluxSink;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/**
 * The loop behind {@code process}: lease up to the free handler slots, run the handler on each
 * item, and acknowledge successes in the next round's {@code completeAndClaim}, so a busy worker
 * pays one statement per round for completing and claiming together.
 *
 * <p>Runs on {@link ClaimLoop}, so rounds never overlap and every piece of the worker's state is
 * touched by one event at a time. What the worker holds, per item: <em>running</em> (its handler
 * has not finished; it holds a slot), <em>releasing</em> (its handler failed and the release is in
 * flight; it still holds a slot), <em>finished</em> (succeeded, waiting for the next round to
 * acknowledge it), <em>acknowledging</em> (in the round in flight), <em>ready</em> (acknowledged,
 * waiting for downstream demand). At most {@code concurrency} items are running or releasing, and
 * a claim is sized so that everything that will be emitted stays within downstream demand plus
 * {@code concurrency}: so at most {@code concurrency} completed items are ever buffered.
 *
 * <p>Handlers are hostile until proven otherwise: a handler that throws (anything, including an
 * {@link Error}) or returns {@code null} fails its own item only; a back-off function that throws
 * or returns {@code null} is replaced by {@link WorkerOptions#exponentialBackoff}; a handler still
 * running when its lease ends is cancelled and its slot freed (the item has lapsed and belongs to
 * whoever reclaims it). Only JVM-fatal errors ({@link Throwables#isJvmFatal}) end the stream, with that error.
 * Transient failures of a round (a lost connection, 40001/40P01, an acknowledgement that timed out,
 * a round with no answer within the lease; see {@link SqlStates#isTransient}) keep the
 * acknowledgements and back off; any other failure ends the stream, logged at ERROR, and what was
 * not acknowledged lapses and is handed out again.
 *
 * <p>Cancellation stops claiming; handlers already running are not cancelled, and what they finish
 * is still acknowledged. Items leased by a round in flight at cancellation are released at once.
 * A graceful stop (the {@code stop} publisher signalling) does the same without cancelling
 * downstream, and completes the stream once all of that has settled: nothing running, releasing
 * or waiting for acknowledgement, and every acknowledged item delivered.
 *
 * @param <K> the key type
 */
public final class Worker<K> {
    private static final Logger log = LoggerFactory.getLogger(Worker.class);

    private final ReactiveWorkQueue<K> queue;
    private final Function<Item<K>, ? extends Publisher<?>> handler;
    private final WorkerOptions options;
    private final Scheduler timer;
    private final Publisher<?> stop;

    /** A worker over {@code queue} that runs until cancelled; nothing runs until {@link #flux()} is subscribed. */
    public Worker(ReactiveWorkQueue<K> queue, Function<Item<K>, ? extends Publisher<?>> handler,
            WorkerOptions options, Scheduler timer) {
        this(queue, handler, options, timer, Mono.never());
    }

    /**
     * A worker over {@code queue} that also stops gracefully on the first signal of {@code stop}
     * (an element, completion or an error); nothing runs until {@link #flux()} is subscribed.
     */
    public Worker(ReactiveWorkQueue<K> queue, Function<Item<K>, ? extends Publisher<?>> handler,
            WorkerOptions options, Scheduler timer, Publisher<?> stop) {
        this.queue = queue;
        this.handler = handler;
        this.options = options;
        this.timer = timer;
        this.stop = stop;
    }

    /** Cold: each subscription runs its own worker, emitting each item once it is completed. */
    public Flux<Item<K>> flux() {
        // ERROR, not BUFFER: the worker keeps its own bounded buffer and never emits beyond demand.
        return Flux.create(sink -> {
            Loop loop = new Loop(sink);
            loop.start();
            Disposable watch = Mono.from(stop).subscribe(
                    ignored -> loop.signal(loop::beginStop),
                    error -> loop.signal(loop::beginStop),
                    () -> loop.signal(loop::beginStop));
            sink.onDispose(watch);
        }, FluxSink.OverflowStrategy.ERROR);
    }

    /** One subscription's worker; every field is confined to the loop's serial execution. */
    private final class Loop extends ClaimLoop<List<Item<K>>> {
        private final FluxSink<Item<K>> items;
        private final Set<Run> running = new HashSet<>();
        private int releasing;
        private List<Item<K>> finished = new ArrayList<>();
        private List<Item<K>> acknowledging = List.of();
        private final ArrayDeque<Item<K>> ready = new ArrayDeque<>();
        private int claimAsked;
        private int backoffFailures;
        /** A graceful stop was asked: claim nothing more, complete once everything has settled. */
        private boolean stopping;

        Loop(FluxSink<Item<K>> sink) {
            super(queue.name(), sink, Backoff.MIN, Backoff.MAX, options.lease(), timer);
            this.items = sink;
        }

        // ------------------------------------------------------------ rounds

        @Override
        void afterEvent() {
            deliver();
            if (stopping && running.isEmpty() && releasing == 0 && finished.isEmpty() && acknowledging.isEmpty()
                    && ready.isEmpty()) {
                finish();
            }
        }

        /** The stop publisher signalled: stop claiming now, and complete once settled. */
        void beginStop() {
            if (!stopping) {
                stopping = true;
                abandonClaims();
            }
        }

        @Override
        @Nullable Round<List<Item<K>>> nextRound(boolean waiting) {
            // While waiting for work only an acknowledgement is urgent; its round then claims too.
            if (waiting && finished.isEmpty()) {
                return null;
            }
            int claim = claimSize();
            if (finished.isEmpty() && claim == 0) {
                return null;
            }
            acknowledging = finished;
            finished = new ArrayList<>();
            claimAsked = claim;
            List<K> keys = acknowledging.stream().map(Item::key).toList();
            Mono<List<Item<K>>> statement = claim > 0
                    ? queue.completeAndClaim(keys, claim, options.lease())
                    : queue.complete(keys).thenReturn(List.of());
            // A round that acknowledges nothing can be cancelled outright: it only leases.
            return new Round<>(statement, acknowledging.isEmpty());
        }

        /**
         * How many items to lease now: within the free slots and the claim batch, and only as many
         * as keep everything this worker will emit within downstream demand plus
         * {@code concurrency}. Nothing while downstream wants nothing, or after cancellation.
         */
        private int claimSize() {
            long demand = items.requestedFromDownstream();
            if (cancelled() || stopping || demand <= 0) {
                return 0;
            }
            int free = options.concurrency() - running.size() - releasing;
            long owed = (long) running.size() + finished.size() + ready.size();
            long room = demand >= Long.MAX_VALUE / 2 ? Long.MAX_VALUE : options.concurrency() + demand - owed;
            return (int) Math.max(0, Math.min(room, Math.min(free, options.claimBatch())));
        }

        @Override
        boolean roundSucceeded(List<Item<K>> leased) {
            ready.addAll(acknowledging);
            acknowledging = List.of();
            if (cancelled() || stopping) {
                releaseAtOnce(leased);
                return false;
            }
            if (!leased.isEmpty()) {
                Batch batch = new Batch();
                for (Item<K> item : leased) {
                    run(item, batch);
                }
                batch.expireAfter(options.lease());
            }
            return claimAsked > 0 && leased.size() < claimAsked;
        }

        @Override
        void roundFailed(Throwable error) {
            // Acknowledge them next round; if the failure is permanent the stream ends and they lapse.
            finished.addAll(0, acknowledging);
            acknowledging = List.of();
        }

        @Override
        Mono<?> awaitWork() {
            return queue.awaitWork(options.poll());
        }

        private void deliver() {
            if (cancelled()) {
                ready.clear();
                return;
            }
            while (!ready.isEmpty() && items.requestedFromDownstream() > 0) {
                items.next(ready.poll());
            }
        }

        /**
         * Cancelled or stopping while the claim ran: hand these back now rather than let them lapse.
         * Counted as releasing, so that a graceful stop completes only after the release has.
         */
        private void releaseAtOnce(List<Item<K>> leased) {
            if (leased.isEmpty()) {
                return;
            }
            releasing++;
            queue.release(Duration.ZERO, null, leased.stream().map(Item::key).toList()).then().subscribe(
                    null,
                    e -> signal(() -> {
                        releasing--;
                        log.warn("releasing {} items on queue {} after the worker stopped claiming failed;"
                                + " they will lapse", leased.size(), name, e);
                    }),
                    () -> signal(() -> releasing--));
        }

        // ------------------------------------------------------------ handlers

        private void run(Item<K> item, Batch batch) {
            Run run = new Run(item, batch);
            running.add(run);
            batch.runs.add(run);
            batch.outstanding++;
            Publisher<?> work;
            try {
                work = Objects.requireNonNull(handler.apply(item), "handler returned null");
            } catch (Throwable error) {
                handlerFailed(run, error);
                return;
            }
            try {
                run.subscription = Flux.from(work).then().subscribe(
                        null,
                        error -> signal(() -> handlerFailed(run, error)),
                        () -> signal(() -> handlerSucceeded(run)));
            } catch (Throwable error) {
                // Reactor rethrows JVM-fatal errors (and a StackOverflowError) from subscribe.
                handlerFailed(run, error);
            }
        }

        private void handlerSucceeded(Run run) {
            if (settle(run)) {
                finished.add(run.item);
            }
        }

        private void handlerFailed(Run run, Throwable error) {
            if (!settle(run)) {
                return;
            }
            if (Throwables.isJvmFatal(error)) {
                stop(error);
                return;
            }
            releasing++;
            queue.release(retryDelay(run.item), error, List.of(run.item.key())).then().subscribe(
                    null,
                    releaseError -> signal(() -> {
                        releasing--;
                        log.warn("releasing {} on queue {} failed; its lease will lapse", run.item.key(), name, releaseError);
                    }),
                    () -> signal(() -> releasing--));
        }

        /** Frees the run's slot; false if it had already settled (or outlived its lease). */
        private boolean settle(Run run) {
            if (!running.remove(run)) {
                return false;
            }
            run.batch.settled();
            return true;
        }

        /**
         * The options' back-off for this item, or the default one if the function misbehaves. A
         * broken function usually breaks for every item: its first failure is logged with the
         * stack trace, later ones without.
         */
        private Duration retryDelay(Item<K> item) {
            try {
                Duration delay = options.backoff().apply(item.attempts());
                if (delay != null) {
                    return delay;
                }
                backoffFailed(item, null);
            } catch (Throwable error) {
                if (Throwables.isJvmFatal(error)) {
                    throw error;
                }
                backoffFailed(item, error);
            }
            return WorkerOptions.exponentialBackoff(item.attempts());
        }

        private void backoffFailed(Item<K> item, @Nullable Throwable error) {
            String what = error == null ? "returned null" : "threw " + error;
            if (backoffFailures++ == 0) {
                log.warn("back-off function {} for {} attempts on queue {}; using the default back-off"
                        + " (logged once per worker)", what, item.attempts(), name, error);
            } else {
                log.debug("back-off function {} for {} attempts on queue {}", what, item.attempts(), name);
            }
        }

        /** One handler invocation. */
        private final class Run {
            final Item<K> item;
            final Batch batch;
            @Nullable Disposable subscription;

            Run(Item<K> item, Batch batch) {
                this.item = item;
                this.batch = batch;
            }
        }

        /** The handlers of one claim, which share a lease and so a deadline. */
        private final class Batch {
            final List<Run> runs = new ArrayList<>();
            int outstanding;
            @Nullable Disposable deadline;

            void expireAfter(Duration lease) {
                if (outstanding > 0) {
                    // The lease began on the server before the claim returned, so by the time this
                    // fires it has lapsed there: the item may already be someone else's. (The
                    // options have capped the lease, so the delay cannot overflow.)
                    deadline = Mono.delay(lease, timer).subscribe(ignored -> signal(this::expire));
                }
            }

            void settled() {
                if (--outstanding == 0 && deadline != null) {
                    deadline.dispose();
                }
            }

            private void expire() {
                for (Run run : runs) {
                    if (running.remove(run)) {
                        log.warn("handler for {} on queue {} outlived its lease of {}; cancelled, the item is left to lapse",
                                run.item.key(), name, options.lease());
                        Disposable subscription = run.subscription;
                        if (subscription != null) {
                            subscription.dispose();
                        }
                    }
                }
                outstanding = 0;
            }
        }
    }
}
