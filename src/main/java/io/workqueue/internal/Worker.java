package io.workqueue.internal;

import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.SnoozeException;
import io.workqueue.WorkerOptions;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscription;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.CoreSubscriber;
import reactor.core.Disposable;
import reactor.core.Disposables;
import reactor.core.publisher.Flux;
import reactor.core.publisher.FluxSink;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Operators;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * The loop behind {@code process}: lease up to the free handler slots, run the handler on each
 * item, and acknowledge successes in the next round's {@code completeAndClaim} (or the
 * {@link AcknowledgeAndClaim} its backend passes), so a busy worker pays one leasing write per
 * round for completing and claiming together.
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
 * <p><b>Where handlers run.</b> Calling a handler and subscribing to its publisher happen on the
 * options' {@link WorkerOptions#handlerScheduler() handler scheduler}, by default a bounded-elastic
 * pool of {@code concurrency} threads that each subscription creates and shuts down
 * when its stream ends. The calls go through {@link HandlerCalls}, which hands a claim's calls to
 * one thread and adds threads only when calls are stuck behind a slow one; the loop holds its next
 * round back while calls are still being handed out, so that a batch of quick handlers is
 * acknowledged by one round, as when they ran in the loop. With {@code Schedulers.immediate()} they
 * do run in the loop, on the thread that delivered the claim. Either way a handler's outcome comes
 * back into the loop as an event, so the state above stays confined to it; the call itself touches
 * nothing of the loop's but its own {@code Run}, whose cancellation is thread-safe. A call that
 * held a non-blocking thread (a driver's event loop, a Reactor parallel thread) for longer than
 * {@link #HELD_THREAD_WARNING} is logged at WARN, at most once per
 * {@link #HELD_THREAD_WARNING_INTERVAL} per worker.
 *
 * <p>Handlers are hostile until proven otherwise: a handler that throws (anything, including an
 * {@link Error}) or returns {@code null} fails its own item only; a back-off function that throws
 * or returns {@code null} is replaced by {@link WorkerOptions#exponentialBackoff}; a handler still
 * running when its lease ends is cancelled and its slot freed (the item has lapsed and belongs to
 * whoever reclaims it). A handler failing with {@link SnoozeException} has its item snoozed.
 *
 * <p><b>Long handlers.</b> With {@link WorkerOptions#maxRunTime()}, a look every sixth of a lease
 * extends, in one call, the leases of the running handlers with a third of their lease gone; an extended run
 * has a lease end of its own, one lease after the extension's answer. A run whose extension is
 * refused (its lease was no longer this worker's) is cancelled and its outcome ignored; a run
 * reaching the maximum is cancelled and its item released. Only JVM-fatal errors ({@link Throwables#isJvmFatal}) end the stream, with that error.
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

    /** How long a handler call may hold a non-blocking thread before the worker says so. */
    static final Duration HELD_THREAD_WARNING = Duration.ofMillis(100);
    /** The least time between two such warnings of one worker; the ones between are counted. */
    static final Duration HELD_THREAD_WARNING_INTERVAL = Duration.ofMinutes(1);
    /**
     * How often the worker looks for handler calls stuck behind a slow one (see
     * {@link HandlerCalls}); a blocking handler's neighbours in a batch start within a few looks.
     */
    static final Duration HANDLER_PATIENCE = Duration.ofMillis(1);
    /** How long an idle thread of a worker's own pool lives. */
    private static final int POOL_THREAD_TTL_SECONDS = 60;
    /** Thread names carry the queue name, cut to this many characters (a name may be 512). */
    private static final int THREAD_NAME_QUEUE_CHARS = 40;

    private final ReactiveWorkQueue<K> queue;
    private final Function<Item<K>, ? extends Publisher<?>> handler;
    private final WorkerOptions options;
    private final Scheduler timer;
    private final Publisher<?> stop;
    private final AcknowledgeAndClaim<K> acknowledgeAndClaim;

    /**
     * How a round that claims acknowledges the successes it carries and leases more: the queue's
     * {@link ReactiveWorkQueue#completeAndClaim} unless a backend passes a variant of its own.
     *
     * @param <K> the key type
     */
    @FunctionalInterface
    public interface AcknowledgeAndClaim<K> {
        /** Completes {@code completed} and leases up to {@code limit} items, as {@code completeAndClaim} does. */
        Mono<List<Item<K>>> apply(Collection<K> completed, int limit, Duration lease);
    }

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
        this(queue, handler, options, timer, stop, queue::completeAndClaim);
    }

    /**
     * As above, with the rounds that claim acknowledging through {@code acknowledgeAndClaim}
     * instead of the queue's {@code completeAndClaim}.
     */
    public Worker(ReactiveWorkQueue<K> queue, Function<Item<K>, ? extends Publisher<?>> handler,
            WorkerOptions options, Scheduler timer, Publisher<?> stop, AcknowledgeAndClaim<K> acknowledgeAndClaim) {
        this.queue = queue;
        this.handler = handler;
        this.options = options;
        this.timer = timer;
        this.stop = stop;
        this.acknowledgeAndClaim = acknowledgeAndClaim;
    }

    /**
     * Cold: each subscription runs its own worker, emitting each item once it is completed. Unless
     * the options name a handler scheduler, each subscription creates a pool of its own for its
     * handlers and shuts it down once its stream has ended and no handler runs (running handlers finish first).
     */
    public Flux<Item<K>> flux() {
        // ERROR, not BUFFER: the worker keeps its own bounded buffer and never emits beyond demand.
        return Flux.create(sink -> {
            Scheduler given = options.handlerScheduler().orElse(null);
            Scheduler handlers = given != null ? given : ownPool();
            Loop loop = new Loop(sink, handlers, given == null);
            loop.start();
            Disposable watch = Mono.from(stop).subscribe(
                    ignored -> loop.signal(loop::beginStop),
                    error -> loop.signal(loop::beginStop),
                    () -> loop.signal(loop::beginStop));
            // A sink keeps one dispose callback: a second would be disposed at once.
            sink.onDispose(given != null ? watch : Disposables.composite(watch, () -> loop.signal(loop::closePool)));
        }, FluxSink.OverflowStrategy.ERROR);
    }

    /**
     * A pool for one worker's handlers: one thread per slot at most, so a blocking handler costs
     * only its own slot; threads start as handlers need them and end when idle. The queue of
     * waiting calls is unbounded because the worker bounds it: it never has more calls than slots.
     */
    private Scheduler ownPool() {
        String name = queue.name();
        String label = name.length() > THREAD_NAME_QUEUE_CHARS ? name.substring(0, THREAD_NAME_QUEUE_CHARS) : name;
        return Schedulers.newBoundedElastic(options.concurrency(), Integer.MAX_VALUE, "workqueue-" + label,
                POOL_THREAD_TTL_SECONDS, true);
    }


    /** One subscription's worker; every field is confined to the loop's serial execution. */
    private final class Loop extends ClaimLoop<List<Item<K>>> {
        private final FluxSink<Item<K>> items;
        private final Scheduler handlers;
        /** How calls reach the handler scheduler; null when they run in the loop (immediate). */
        private final @Nullable HandlerCalls<Run> calls;
        /** Handlers run in the loop, where the claim arrived: a driver's thread in production. */
        private final boolean onDeliveringThread;
        private long heldWarnedAtMillis;
        private boolean heldWarned;
        private int heldUnreported;
        private long heldUnreportedLongestNanos;
        private final Set<Run> running = new HashSet<>();
        private int releasing;
        private List<Item<K>> finished = new ArrayList<>();
        private List<Item<K>> acknowledging = List.of();
        private final ArrayDeque<Item<K>> ready = new ArrayDeque<>();
        private int claimAsked;
        private int backoffFailures;
        /** A graceful stop was asked: claim nothing more, complete once everything has settled. */
        private boolean stopping;
        /** The handler pool is the worker's own, to shut down when the stream has ended. */
        private final boolean ownsPool;
        /** The stream has ended: shut the own pool down once no handler runs. */
        private boolean poolClosing;
        /** The options' maximum run time: null when leases are not kept alive. */
        private final @Nullable Duration maxRunTime = options.maxRunTime().orElse(null);
        /** The next look for leases to extend, while handlers run and leases are kept alive. */
        private @Nullable Disposable keeperTick;

        Loop(FluxSink<Item<K>> sink, Scheduler handlers, boolean ownsPool) {
            super(queue.name(), sink, Backoff.MIN, Backoff.MAX, options.lease(), timer);
            this.items = sink;
            this.handlers = handlers;
            this.ownsPool = ownsPool;
            this.onDeliveringThread = handlers == Schedulers.immediate();
            this.calls = onDeliveringThread ? null : new HandlerCalls<>(handlers, options.concurrency(), timer,
                    HANDLER_PATIENCE, () -> signal(() -> {}), (run, refused) -> signal(() -> handlerFailed(run, refused)));
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
            // Handlers of the last claim still being handed out: let them start (and the quick
            // ones finish) so that one round acknowledges them all. The last to start signals.
            if (calls != null && !cancelled() && calls.handingOut()) {
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
                    ? acknowledgeAndClaim.apply(keys, claim, options.lease())
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
                if (calls != null) {
                    calls.submitAll(batch.runs);
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

        /**
         * Takes a slot for {@code item}; calls its handler at once in the loop, or leaves the call
         * for the caller to hand to the handler scheduler with the rest of its batch.
         */
        private void run(Item<K> item, Batch batch) {
            Run run = new Run(item, batch);
            running.add(run);
            if (maxRunTime != null) {
                keep(run, maxRunTime);
            }
            batch.runs.add(run);
            batch.outstanding++;
            if (calls == null) {
                call(run);
            }
        }

        /**
         * Calls the handler and subscribes to its publisher, on the handler scheduler's thread
         * (outside the loop, unless that scheduler is the immediate one); what follows comes back
         * as events. Skipped if the run was cancelled (its lease ended) before a thread took it.
         */
        private void call(Run run) {
            if (run.isDisposed()) {
                return;
            }
            boolean timed = onDeliveringThread || Schedulers.isInNonBlockingThread();
            // Real time, not the timer's: how long the thread was actually held.
            long start = timed ? System.nanoTime() : 0L;
            try {
                Publisher<?> work = Objects.requireNonNull(handler.apply(run.item), "handler returned null");
                Flux.from(work).subscribe(run);
            } catch (Throwable error) {
                // Reactor rethrows JVM-fatal errors (and a StackOverflowError) from subscribe.
                signal(() -> handlerFailed(run, error));
            }
            if (timed) {
                long held = System.nanoTime() - start;
                if (held >= HELD_THREAD_WARNING.toNanos()) {
                    String thread = Thread.currentThread().getName();
                    signal(() -> heldThread(run.item, held, thread));
                }
            }
        }

        /**
         * A handler call held a non-blocking thread too long: say so, naming the handler, at most
         * once per interval; the calls in between are counted into the next warning.
         */
        private void heldThread(Item<K> item, long heldNanos, String thread) {
            long now = timer.now(TimeUnit.MILLISECONDS);
            if (heldWarned && now - heldWarnedAtMillis < HELD_THREAD_WARNING_INTERVAL.toMillis()) {
                heldUnreported++;
                heldUnreportedLongestNanos = Math.max(heldUnreportedLongestNanos, heldNanos);
                log.debug("handler {} of queue {} held non-blocking thread {} for {} ms on item {}",
                        handler, name, thread, TimeUnit.NANOSECONDS.toMillis(heldNanos), item.key());
                return;
            }
            String since = heldUnreported == 0 ? "" : "; " + heldUnreported + " more such calls since the last warning,"
                    + " the longest " + TimeUnit.NANOSECONDS.toMillis(heldUnreportedLongestNanos) + " ms";
            log.warn("handler {} of queue {} held non-blocking thread {} for {} ms on item {}: that thread ran nothing"
                            + " else meanwhile (the database driver's statements, Reactor's timers). Handlers run there"
                            + " because WorkerOptions.handlerScheduler is {}; leave it unset for the worker's own pool,"
                            + " where blocking is allowed{}. Logged at most once a minute per worker.",
                    handler, name, thread, TimeUnit.NANOSECONDS.toMillis(heldNanos), item.key(),
                    onDeliveringThread ? "Schedulers.immediate()" : handlers, since);
            heldWarned = true;
            heldWarnedAtMillis = now;
            heldUnreported = 0;
            heldUnreportedLongestNanos = 0;
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
            if (error instanceof SnoozeException snooze) {
                handBack(run.item, "snoozing", queue.snooze(snooze.delay(), List.of(run.item)));
            } else {
                release(run.item, error);
            }
        }

        /** Releases a failed item after its back-off, recording {@code error}. */
        private void release(Item<K> item, Throwable error) {
            handBack(item, "releasing", queue.release(retryDelay(item), error, List.of(item.key())));
        }

        /**
         * Runs a write handing {@code item} back; its slot stays taken until the write ends, so a
         * graceful stop completes only after it. A failure leaves the lease to lapse.
         */
        private void handBack(Item<K> item, String doing, Mono<?> write) {
            releasing++;
            write.then().subscribe(
                    null,
                    writeError -> signal(() -> {
                        releasing--;
                        log.warn("{} {} on queue {} failed; its lease will lapse", doing, item.key(), name, writeError);
                    }),
                    () -> signal(() -> releasing--));
        }

        /** Frees the run's slot; false if it had already settled (or outlived its lease). */
        private boolean settle(Run run) {
            if (!running.remove(run)) {
                return false;
            }
            run.batch.settled();
            run.stopTimers();
            closePoolIfIdle();
            return true;
        }

        /**
         * The stream ended: the worker's own pool is shut down once no handler runs, since
         * cancelling a worker does not cancel its running handlers. Disposed outright then, rather
         * than gracefully: a graceful disposal waits for the pool on a helper thread of Reactor's
         * that is not a daemon and lingers for seconds, holding a plain program's JVM open after
         * its main method returned.
         */
        void closePool() {
            poolClosing = true;
            closePoolIfIdle();
        }

        private void closePoolIfIdle() {
            if (poolClosing && ownsPool && running.isEmpty()) {
                handlers.dispose();
            }
        }

        /**
         * Ends a run its handler has not finished: frees its slot, cancels its publisher, and
         * interrupts a call still blocking a pool thread, as subscribeOn does on cancellation (a
         * thread held past the lease would leave a slot without one). Whatever the handler does
         * afterwards is ignored. False if the run had already settled.
         */
        private boolean end(Run run) {
            if (!running.remove(run)) {
                return false;
            }
            run.batch.settled();
            run.stopTimers();
            run.dispose();
            if (calls != null) {
                calls.stop(run);
            }
            closePoolIfIdle();
            return true;
        }

        /** The run's lease ended with its handler still running: the item is left to lapse. */
        private void outlived(Run run) {
            if (running.contains(run)) {
                log.warn("handler for {} on queue {} outlived its lease of {}; cancelled, the item is left to lapse",
                        run.item.key(), name, options.lease());
                end(run);
            }
        }

        // ------------------------------------------------------------ long handlers (maxRunTime)

        /**
         * Starts keeping {@code run}'s lease alive: its lease ends (as this process sees it) one
         * lease from now, when the claim's answer arrived; it is cancelled and released
         * {@code maxRunTime} from now.
         */
        private void keep(Run run, Duration maxRunTime) {
            long now = timer.now(TimeUnit.NANOSECONDS);
            run.leaseEndsNanos = now + options.lease().toNanos();
            run.overrun = Mono.delay(maxRunTime, timer).subscribe(ignored -> signal(() -> overran(run)));
            if (keeperTick == null) {
                scheduleKeeper();
            }
        }

        /**
         * The period of the look for leases to extend: a sixth of the lease, so that a lease due
         * for extension (a third of it gone) gets its first try with at least half of it left.
         */
        private void scheduleKeeper() {
            Duration period = options.lease().dividedBy(6);
            keeperTick = Mono.delay(period.compareTo(Duration.ofMillis(1)) < 0 ? Duration.ofMillis(1) : period, timer)
                    .subscribe(ignored -> signal(this::keepLeases));
        }

        /**
         * Extends, in one call, the leases of every running handler with a third of its lease gone
         * and no extension in flight, and looks again a sixth of a lease later while handlers run.
         * Calls of one worker, and of every worker of the instance, share statements through the
         * queue's group commit.
         */
        private void keepLeases() {
            keeperTick = null;
            if (running.isEmpty()) {
                return;
            }
            long now = timer.now(TimeUnit.NANOSECONDS);
            long twoThirds = options.lease().toNanos() / 3 * 2;
            List<Run> due = running.stream()
                    .filter(run -> !run.extending && run.leaseEndsNanos - now <= twoThirds)
                    .toList();
            if (!due.isEmpty()) {
                due.forEach(run -> run.extending = true);
                queue.extend(options.lease(), due.stream().map(run -> run.item).toList()).subscribe(
                        extended -> signal(() -> extended(due, extended)),
                        error -> signal(() -> {
                            due.forEach(run -> run.extending = false);
                            log.warn("extending the leases of {} running handlers on queue {} failed; trying again"
                                    + " at the next look, and each is cancelled if its lease ends first",
                                    due.size(), name, error);
                        }));
            }
            scheduleKeeper();
        }

        /**
         * An extension answered: each extended run's lease now ends one lease from now; a run whose
         * lease was not extended is no longer this worker's, so its handler is cancelled and what it
         * would complete discarded (counted by the queue as a refused extension).
         */
        private void extended(List<Run> due, Set<K> extended) {
            long now = timer.now(TimeUnit.NANOSECONDS);
            for (Run run : due) {
                run.extending = false;
                if (!running.contains(run)) {
                    continue;
                }
                if (extended.contains(run.item.key())) {
                    run.leaseEndsNanos = now + options.lease().toNanos();
                    if (run.leaseEnd != null) {
                        run.leaseEnd.dispose();
                    }
                    run.leaseEnd = Mono.delay(options.lease(), timer).subscribe(ignored -> signal(() -> outlived(run)));
                } else {
                    log.warn("the lease of {} on queue {} was no longer this worker's when it asked to extend it"
                            + " (it had lapsed; another worker may hold it now); the handler is cancelled and its"
                            + " result discarded", run.item.key(), name);
                    end(run);
                }
            }
        }

        /** The run reached the maximum run time: cancelled, its item released as a failure. */
        private void overran(Run run) {
            if (running.contains(run)) {
                log.warn("handler for {} on queue {} ran longer than its maximum run time of {}; cancelled and"
                        + " released", run.item.key(), name, maxRunTime);
                end(run);
                release(run.item, new TimeoutException("the handler ran longer than the worker's maxRunTime of "
                        + maxRunTime));
            }
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

        /**
         * One handler invocation, and the subscriber to its publisher. Disposing it cancels that
         * publisher, now or as soon as it is subscribed, and stops a call not yet started; it is
         * safe from any thread.
         */
        private final class Run extends HandlerCalls.Call implements CoreSubscriber<Object>, Disposable {
            final Item<K> item;
            final Batch batch;
            private final AtomicReference<@Nullable Subscription> upstream = new AtomicReference<>();
            /** With maxRunTime: when this process takes the lease to have ended, on the timer's clock. */
            long leaseEndsNanos;
            /** With maxRunTime: the run's own lease end once extended (the batch's no longer applies). */
            @Nullable Disposable leaseEnd;
            /** With maxRunTime: the end of the run's maximum run time. */
            @Nullable Disposable overrun;
            /** With maxRunTime: an extension of this run's lease is in flight. */
            boolean extending;

            Run(Item<K> item, Batch batch) {
                this.item = item;
                this.batch = batch;
            }

            @Override
            void call() {
                Loop.this.call(this);
            }

            @Override
            public void onSubscribe(Subscription subscription) {
                if (upstream.compareAndSet(null, subscription)) {
                    subscription.request(Long.MAX_VALUE);
                } else {
                    // Disposed before the subscription came (or a publisher subscribed it twice).
                    subscription.cancel();
                }
            }

            @Override
            public void onNext(Object ignored) {
                // What a handler emits is ignored: its completion is the success.
            }

            @Override
            public void onError(Throwable error) {
                signal(() -> handlerFailed(this, error));
            }

            @Override
            public void onComplete() {
                signal(() -> handlerSucceeded(this));
            }

            @Override
            public void dispose() {
                Subscription previous = upstream.getAndSet(Operators.cancelledSubscription());
                if (previous != null) {
                    previous.cancel();
                }
            }

            @Override
            public boolean isDisposed() {
                return upstream.get() == Operators.cancelledSubscription();
            }

            /** Stops the run's own timers, if any; in the loop. */
            void stopTimers() {
                if (leaseEnd != null) {
                    leaseEnd.dispose();
                }
                if (overrun != null) {
                    overrun.dispose();
                }
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
                    // An extended run has a lease end of its own.
                    if (run.leaseEnd == null) {
                        outlived(run);
                    }
                }
            }
        }
    }
}
