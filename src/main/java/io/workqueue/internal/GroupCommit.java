package io.workqueue.internal;

import io.workqueue.QueueClosedException;
import io.workqueue.WriteTimeoutException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Iterator;
import java.util.concurrent.CancellationException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiPredicate;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.ToIntFunction;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Subscription;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;

/**
 * Merges concurrent submissions into one write at a time.
 *
 * <p>Submissions go into a {@link Sinks.Many} drained by one subscriber, which queues them in
 * arrival order. While a write is in flight, everything that arrives waits in that queue; when it
 * finishes, the next write takes submissions from the front of the queue until their total weight
 * (a payload's size: keys, entries) would pass {@code maxWeight}. So however many callers submit
 * concurrently, exactly one write is in flight, no write carries more than {@code maxWeight}
 * (except a single submission heavier than that, which is never split and goes alone), a backlog
 * drains in order at the pace of the writes, and an idle queue writes at once (no timer). The
 * queue itself is unbounded: every waiting submission is some caller's call in progress, and the
 * bound that matters is the size of one write, which must fit in its timeout.
 *
 * <p>A {@link Policy} can change that: a write carries only submissions {@linkplain Policy#mergeable
 * mergeable} with the first it takes (the others keep their place for a later write), a write
 * may be {@linkplain Policy#abandonable abandoned} once every caller it carries has cancelled, and
 * {@linkplain Policy#maxInFlight more than one write} may be in flight at once, or only once the
 * writes in flight have {@linkplain Policy#slowAfter turned slow}.
 *
 * <p>Each submission's {@code Mono} emits its own result from the write that carried it (or
 * completes empty for a write without results), fails when that write fails, and is the caller's
 * alone: cancelling it never cancels a write that carries other callers too, because the write is
 * subscribed here, not by any caller. Unless the policy says otherwise, it never cancels the write
 * at all. Nothing a caller's own code does when signalled (throwing from an error handler, even a
 * {@link VirtualMachineError} thrown down its chain) can stop the group commit: every other caller
 * of the batch is still signalled, the next write still starts, and the throw is logged.
 *
 * <p>Thread-safe. Emission into the sink happens under a lock: a sink refuses concurrent
 * emitters ({@code FAIL_NON_SERIALIZED}), and retrying in a loop both spins and can still give
 * up, whereas the critical section is a queue offer.
 *
 * @param <T> what one caller submits
 * @param <R> what one caller gets back; {@link Void} for writes without a per-caller result
 */
public final class GroupCommit<T, R> {
    private static final Logger log = LoggerFactory.getLogger(GroupCommit.class);

    private final String name;
    private final String operation;
    private final Function<List<T>, Mono<List<R>>> write;
    private final ToIntFunction<? super T> weight;
    private final int maxWeight;
    private final Duration timeout;
    private final Scheduler timer;
    private final WriteListener listener;
    private final Policy<T, R> policy;
    /** A {@link Submission}'s states. */
    private static final int WAITING = 0;
    private static final int SIGNALLED = 1;
    private static final int CANCELLED = 2;

    private final Sinks.Many<Submission> submissions = Sinks.many().unicast().onBackpressureBuffer();
    private final Object emitLock = new Object();
    private final Drain drain = new Drain();
    private boolean closed; // guarded by emitLock
    private @Nullable Mono<Void> closing; // guarded by emitLock

    /**
     * What a write may carry and what a caller's cancellation does.
     *
     * @param mergeable   whether a submission may ride in the write whose first submission is the
     *                    first argument; one that may not waits, keeping its place, for a later write
     * @param abandonable whether a write is cancelled once every caller it carries has cancelled
     *                    (a caller that cancels before its write starts is then dropped unwritten),
     *                    and a result whose caller has cancelled goes to {@code unclaimed}. For a
     *                    write whose effect outlives its callers only if someone takes the result,
     *                    such as a claim's leases. Otherwise a write runs whoever is still waiting.
     * @param unclaimed   takes each result whose caller cancelled before it arrived; must not throw
     * @param maxInFlight how many writes may be in flight at once; 1 for one write at a time. More
     *                    keeps one slow write (waiting on a lock, a slow commit) from holding up
     *                    every other caller, at the price of writes that may contend
     * @param callersLog  whether every caller logs a failure it receives itself (a claim loop
     *                    does, with what it does next): the group commit then logs a failed write
     *                    at DEBUG only, so that one failure is one line in the log, not two
     * @param slowAfter   with {@code maxInFlight} above one: a further write starts only once every
     *                    write in flight has run this long, so that writes of normal length run one
     *                    at a time and what arrives meanwhile merges into the next, while a slow one
     *                    (waiting for a lock) still does not hold up the callers behind it for
     *                    longer than this. {@link Duration#ZERO}: at once
     * @param regroupWithin after a write whose results sent several callers straight back (see
     *                    {@code comesBack}) ends, how long the next may wait for as much to be
     *                    submitted again as those callers had: callers that resubmit from their
     *                    own threads come back one by one, and the first would otherwise find the
     *                    queue idle and go alone. It starts as soon as that much waits.
     *                    {@link Duration#ZERO}: never waits
     * @param comesBack   whether a caller, given this result for this payload, submits again at
     *                    once (a claim loop whose batch came back full); only those are waited for
     * @param <T>         what one caller submits
     * @param <R>         what one caller gets back
     */
    public record Policy<T, R>(BiPredicate<? super T, ? super T> mergeable, boolean abandonable,
            Consumer<? super R> unclaimed, int maxInFlight, boolean callersLog, Duration slowAfter,
            Duration regroupWithin, BiPredicate<? super T, ? super @Nullable R> comesBack) {
        /** Validates {@code maxInFlight}, {@code slowAfter} and {@code regroupWithin}. */
        public Policy {
            if (maxInFlight < 1) {
                throw new IllegalArgumentException("maxInFlight must be at least 1 but was " + maxInFlight);
            }
            if (slowAfter.isNegative()) {
                throw new IllegalArgumentException("slowAfter must not be negative but was " + slowAfter);
            }
            if (regroupWithin.isNegative()) {
                throw new IllegalArgumentException("regroupWithin must not be negative but was " + regroupWithin);
            }
        }

        /** A policy whose further writes start at once. */
        public Policy(BiPredicate<? super T, ? super T> mergeable, boolean abandonable, Consumer<? super R> unclaimed,
                int maxInFlight, boolean callersLog) {
            this(mergeable, abandonable, unclaimed, maxInFlight, callersLog, Duration.ZERO, Duration.ZERO,
                    (payload, result) -> false);
        }

        /** A policy whose group commit logs each failed write itself. */
        public Policy(BiPredicate<? super T, ? super T> mergeable, boolean abandonable, Consumer<? super R> unclaimed,
                int maxInFlight) {
            this(mergeable, abandonable, unclaimed, maxInFlight, false);
        }

        /** Any submission rides with any other; a write runs whoever cancels; one write at a time. */
        public static <T, R> Policy<T, R> shared() {
            return new Policy<>((first, other) -> true, false, result -> {}, 1);
        }
    }

    /** Told how each write that carried at least one payload ended; must not throw. */
    @FunctionalInterface
    public interface WriteListener {
        /** Listens to nothing. */
        WriteListener NONE = (outcome, nanos) -> {};

        /** A write ended with {@code outcome}, {@code nanos} after it started. */
        void writeEnded(WriteOutcome outcome, long nanos);
    }

    /**
     * @param name      names the queue in errors and logs
     * @param operation names what the writes do ("enqueue", "complete") in errors and logs
     * @param write     performs one merged write of every payload in the list and emits one result
     *                  per payload, in the list's order; never called concurrently with itself
     * @param weight    the size of one payload, counted against {@code maxWeight}; at least 0
     * @param maxWeight the most total weight one write carries, unless a single payload alone
     *                  weighs more; at least 1
     * @param timeout   bound on one write; on expiry every caller in the batch fails with a
     *                  {@link WriteTimeoutException}
     * @param timer     the scheduler for the timeout
     * @param listener  told how each write ended
     */
    public GroupCommit(String name, String operation, Function<List<T>, Mono<List<R>>> write,
            ToIntFunction<? super T> weight, int maxWeight, Duration timeout, Scheduler timer, WriteListener listener) {
        this(name, operation, write, weight, maxWeight, timeout, timer, listener, Policy.shared());
    }

    /**
     * As {@link #GroupCommit(String, String, Function, ToIntFunction, int, Duration, Scheduler,
     * WriteListener)}, with {@code policy} deciding what a write may carry and what cancellation does.
     */
    public GroupCommit(String name, String operation, Function<List<T>, Mono<List<R>>> write,
            ToIntFunction<? super T> weight, int maxWeight, Duration timeout, Scheduler timer, WriteListener listener,
            Policy<T, R> policy) {
        if (maxWeight < 1) {
            throw new IllegalArgumentException("maxWeight must be at least 1 but was " + maxWeight);
        }
        this.name = name;
        this.operation = operation;
        this.write = write;
        this.weight = weight;
        this.maxWeight = maxWeight;
        this.timeout = timeout;
        this.timer = timer;
        this.listener = listener;
        this.policy = policy;
        submissions.asFlux().subscribe(drain);
    }

    /** Adapts a write that has no per-caller result: every caller's {@code Mono} completes empty. */
    public static <T> Function<List<T>, Mono<List<Void>>> withoutResults(Function<List<T>, Mono<Void>> write) {
        return payloads -> write.apply(payloads).then(Mono.fromSupplier(() -> Collections.nCopies(payloads.size(), null)));
    }

    /**
     * Submits {@code payload} to the next write that has room for it. Call at subscription time
     * (inside {@code Mono.defer}); the returned {@code Mono} is hot: the submission has been made.
     */
    public Mono<R> submit(T payload) {
        Submission submission = new Submission(payload, Math.max(0, weight.applyAsInt(payload)));
        synchronized (emitLock) {
            if (closed) {
                return Mono.error(new QueueClosedException("queue " + name + " is closed; " + operation + " refused"));
            }
            emit(submission);
        }
        Mono<R> result = submission.done.asMono();
        return policy.abandonable() ? result.doOnCancel(() -> drain.cancelled(submission)) : result;
    }

    /**
     * Refuses every later submission and completes once everything submitted before has been
     * written (successfully or not). Idempotent: later calls return the same flush.
     */
    public Mono<Void> close() {
        synchronized (emitLock) {
            if (closing == null) {
                closed = true;
                closing = emitFlushMarker().cache();
            }
            return closing;
        }
    }

    /**
     * Completes once everything submitted before this call has been written (successfully or
     * not), without refusing later submissions. Starts at the call, like {@link #close()}.
     */
    public Mono<Void> flush() {
        synchronized (emitLock) {
            return emitFlushMarker();
        }
    }

    /**
     * Emits a marker with no payload and no weight; the returned {@code Mono} completes when the
     * batch it rides in finishes. Batches are taken from the front of the queue, so every earlier
     * submission rode in that batch or an earlier one. Hold emitLock.
     */
    private Mono<Void> emitFlushMarker() {
        Submission marker = new Submission(null, 0);
        emit(marker);
        return marker.done.asMono().then().onErrorResume(e -> Mono.empty());
    }

    private void emit(Submission submission) {
        Sinks.EmitResult result = submissions.tryEmitNext(submission);
        if (result.isFailure()) {
            // Serialised and unbounded, so this means the drain was cancelled: a bug, not load.
            submission.done.tryEmitError(new IllegalStateException("group commit for " + name + " refused a submission: " + result));
        }
    }

    /**
     * One caller's payload and the signal it waits on; a {@code null} payload is a flush marker.
     * {@code state} is set once, by whichever comes first: the caller is signalled, or it cancels.
     */
    private final class Submission {
        final @Nullable T payload;
        final int weight;
        final Sinks.One<R> done = Sinks.one();
        final AtomicInteger state = new AtomicInteger(WAITING);
        /** The write carrying it, once one does; guarded by the drain. */
        Drain.@Nullable Write write;

        Submission(@Nullable T payload, int weight) {
            this.payload = payload;
            this.weight = weight;
        }
    }

    /**
     * The single consumer: queues submissions and runs one write at a time from the front of the
     * queue. Starting writes is a drain loop (a work-in-progress count), not a recursion, because a
     * write can finish synchronously inside its own start, and a backlog of many small writes would
     * otherwise nest one stack frame per write.
     */
    private final class Drain extends BaseSubscriber<Submission> {
        private final ArrayDeque<Submission> pending = new ArrayDeque<>(); // guarded by this
        /** The writes in flight (their number, and their ages); guarded by this. */
        private final List<Write> inFlight = new ArrayList<>();
        /** What the next write waits to gather (see Policy#regroupWithin), and until when; guarded by this. */
        private long regroupWeight;
        private long regroupUntilNanos;
        /** The next look at submissions that wait for a write to turn slow or for a group to gather; guarded by this. */
        private @Nullable Disposable nextLook;
        /** When that look is due, on the timer's clock; guarded by this. */
        private long lookAtNanos;
        private final AtomicInteger wip = new AtomicInteger();

        @Override
        protected void hookOnSubscribe(Subscription subscription) {
            subscription.request(Long.MAX_VALUE);
        }

        @Override
        protected void hookOnNext(Submission submission) {
            synchronized (this) {
                pending.add(submission);
            }
            drainLoop();
        }

        /**
         * A caller of an abandonable commit cancelled: it leaves the queue if no write has taken
         * it yet, and a write left without a caller is cancelled.
         */
        void cancelled(Submission submission) {
            Write orphaned;
            synchronized (this) {
                if (!submission.state.compareAndSet(WAITING, CANCELLED)) {
                    return;
                }
                Write write = submission.write;
                if (write == null) {
                    // Still queued, or taken by a write that has not counted its callers yet,
                    // which then leaves it out.
                    pending.remove(submission);
                    return;
                }
                orphaned = --write.callers == 0 ? write : null;
            }
            if (orphaned != null) {
                orphaned.abandon();
            }
        }

        /** Starts the next write if none is in flight; any thread may call it, one thread runs it. */
        private void drainLoop() {
            if (wip.getAndIncrement() != 0) {
                return;
            }
            int missed = 1;
            do {
                Write next;
                while ((next = takeBatchIfIdle()) != null) {
                    startWrite(next);
                }
                missed = wip.addAndGet(-missed);
            } while (missed != 0);
        }

        /**
         * Takes the next batch from the front of the queue: submissions in order while their weight
         * fits, the first payload always (a heavy one alone), and the flush markers among them.
         * Submissions the policy does not merge with the first are passed over and keep their
         * place; a flush marker behind one of them stays too, since it must not overtake it. With
         * several writes allowed in flight, a flush marker also waits until none is: it rides a
         * write that starts after every earlier one has finished.
         */
        private synchronized @Nullable Write takeBatchIfIdle() {
            if (inFlight.size() >= policy.maxInFlight() || pending.isEmpty()) {
                return null;
            }
            long now = timer.now(TimeUnit.NANOSECONDS);
            if (!inFlight.isEmpty() && !policy.slowAfter().isZero()) {
                long youngest = inFlight.stream().mapToLong(write -> write.takenNanos).max().orElseThrow();
                // At most slowAfter: a wall clock stepped back must not postpone the look.
                long untilSlow = Math.min(youngest + policy.slowAfter().toNanos() - now, policy.slowAfter().toNanos());
                if (untilSlow > 0) {
                    lookAgainIn(untilSlow, now);
                    return null;
                }
            }
            if (regroupWeight > 0) {
                long untilDone = Math.min(regroupUntilNanos - now, policy.regroupWithin().toNanos());
                if (untilDone > 0 && pendingWeight() < regroupWeight) {
                    lookAgainIn(untilDone, now);
                    return null;
                }
                regroupWeight = 0;
            }
            List<Submission> batch = takeBatch(inFlight.size());
            if (batch.isEmpty()) {
                return null; // a flush marker at the front waits for the writes in flight
            }
            Write write = new Write(batch, now);
            inFlight.add(write);
            if (pending.isEmpty() && nextLook != null) {
                nextLook.dispose(); // nothing is left waiting for it
                nextLook = null;
            }
            return write;
        }

        /** The weight of the payloads waiting; guarded by this. */
        private long pendingWeight() {
            long weight = 0;
            for (Submission submission : pending) {
                weight += submission.weight;
            }
            return weight;
        }

        /**
         * Submissions wait: for the write in flight, which is not slow yet, or for the callers of
         * the last write to come back. Look again when the wait ends (a write that ends first, or
         * a submission that completes the group, takes them itself). One look at a time; guarded by this.
         */
        private void lookAgainIn(long nanos, long now) {
            long at = now + nanos;
            if (nextLook != null) {
                if (lookAtNanos <= at) {
                    return;
                }
                nextLook.dispose(); // a wait that ends sooner: look then instead
            }
            lookAtNanos = at;
            Disposable[] self = new Disposable[1];
            try {
                self[0] = timer.schedule(() -> {
                    synchronized (this) {
                        if (nextLook == self[0]) {
                            nextLook = null;
                        }
                    }
                    drainLoop();
                }, nanos, TimeUnit.NANOSECONDS);
                nextLook = self[0];
            } catch (RejectedExecutionException e) {
                // The timer is shut down: the write in flight ends some time, and takes them then.
                nextLook = null;
            }
        }

        private List<Submission> takeBatch(int othersInFlight) {
            List<Submission> batch = new ArrayList<>();
            long taken = 0;
            @Nullable T first = null;
            boolean passedOver = false;
            for (Iterator<Submission> it = pending.iterator(); it.hasNext(); ) {
                Submission next = it.next();
                T payload = next.payload;
                if (payload != null && next.state.get() == CANCELLED) {
                    it.remove(); // its caller left before it reached the queue
                    continue;
                }
                if (payload == null) {
                    if (passedOver || othersInFlight > 0) {
                        break;
                    }
                } else if (first == null) {
                    first = payload;
                    taken = next.weight;
                } else if (!policy.mergeable().test(first, payload)) {
                    passedOver = true;
                    continue;
                } else if (taken + next.weight > maxWeight) {
                    break;
                } else {
                    taken += next.weight;
                }
                it.remove();
                batch.add(next);
            }
            return batch;
        }

        private void startWrite(Write run) {
            List<Submission> batch = run.batch;
            List<T> payloads = new ArrayList<>(batch.size());
            synchronized (this) {
                for (Submission s : batch) {
                    if (s.payload != null && s.state.get() != CANCELLED) {
                        s.write = run;
                        payloads.add(s.payload);
                    }
                }
                run.callers = payloads.size();
            }
            if (payloads.isEmpty()) {
                // Flush markers only, or callers that all cancelled before it started.
                run.finish(List.of(), null);
                return;
            }
            run.writes = true;
            Mono<List<R>> written = Mono.defer(() -> {
                        run.started = System.nanoTime();
                        return write.apply(payloads);
                    })
                    // A fallback rather than mapping TimeoutException: only this bound's expiry is
                    // a timeout of unknown outcome, not a TimeoutException the write itself signals.
                    .timeout(timeout, Mono.defer(() -> {
                        run.timedOut = true;
                        return Mono.error(new WriteTimeoutException(
                                operation + " on queue " + name + " did not commit within " + timeout, timeout, null));
                    }), timer)
                    .flatMap(results -> results.size() == payloads.size()
                            ? Mono.just(results)
                            : Mono.error(new IllegalStateException(operation + " on queue " + name + " returned "
                                    + results.size() + " results for " + payloads.size() + " submissions")))
                    .switchIfEmpty(Mono.error(() -> new IllegalStateException(
                            operation + " on queue " + name + " returned no results")));
            try {
                Disposable subscription = written.subscribe(results -> run.finish(results, null),
                        error -> run.finish(List.of(), error));
                run.subscription = subscription;
                if (run.abandoned) {
                    subscription.dispose(); // abandoned while subscribing: abandon() found nothing to stop
                }
            } catch (Throwable fatal) {
                // Reactor rethrows JVM-fatal errors out of subscribe; the batch must still be told,
                // and the in-flight flag cleared, or every later caller would wait forever.
                run.finish(List.of(), fatal);
            }
        }

        /** One batch being written; finishes once, whichever signal or throw comes first. */
        private final class Write {
            private final List<Submission> batch;
            /** When it was taken from the queue, on the timer's clock. */
            final long takenNanos;
            /** False for a batch that finishes without writing: flush markers, cancelled callers. */
            private volatile boolean writes;
            private final AtomicBoolean finished = new AtomicBoolean();
            private volatile long started = System.nanoTime();
            private volatile boolean timedOut;
            /** Callers carried and not cancelled; guarded by the drain. */
            int callers;
            private volatile @Nullable Disposable subscription;
            private volatile boolean abandoned;

            Write(List<Submission> batch, long takenNanos) {
                this.batch = batch;
                this.takenNanos = takenNanos;
            }

            /**
             * Every caller cancelled: stop the write (what it was doing is the writer's to undo on
             * cancellation, such as cancelling its statement) and let the next one start.
             */
            void abandon() {
                abandoned = true;
                Disposable running = subscription;
                if (running != null) {
                    running.dispose();
                }
                writes = false; // nothing to report: nobody waits for it, and it did not fail
                finish(List.of(), new CancellationException(operation + " on queue " + name + " abandoned by every caller"));
            }

            /**
             * Before its callers are signalled: if several will submit again at once, the next
             * write waits for them (Policy#regroupWithin).
             */
            private void regroup(List<R> results) {
                long weight = 0;
                int returning = 0;
                int next = 0;
                synchronized (Drain.this) {
                    for (Submission s : batch) {
                        if (s.payload == null || s.write != this) {
                            continue; // a flush marker, or cancelled before the write started
                        }
                        // null for a write without results (withoutResults).
                        R result = results.get(next++);
                        if (s.state.get() == WAITING && policy.comesBack().test(s.payload, result)) {
                            weight += s.weight;
                            returning++;
                        }
                    }
                    if (returning > 1) {
                        regroupWeight = weight;
                        regroupUntilNanos = timer.now(TimeUnit.NANOSECONDS) + policy.regroupWithin().toNanos();
                    }
                }
            }

            /** Hands each caller its result, in submission order, then lets the next write start. */
            void finish(List<R> results, @Nullable Throwable error) {
                if (!finished.compareAndSet(false, true)) {
                    return;
                }
                if (writes && error == null && !policy.regroupWithin().isZero()) {
                    regroup(results);
                }
                try {
                    if (writes) {
                        report(error);
                    }
                    signal(results, error);
                } finally {
                    synchronized (Drain.this) {
                        inFlight.remove(this);
                    }
                    drainLoop();
                }
            }

            private void report(@Nullable Throwable error) {
                WriteOutcome outcome = error == null ? WriteOutcome.SUCCESS
                        : timedOut ? WriteOutcome.TIMEOUT : WriteOutcome.FAILURE;
                try {
                    listener.writeEnded(outcome, System.nanoTime() - started);
                } catch (RuntimeException e) {
                    log.warn("recording a group-committed {} on queue {} failed", operation, name, e);
                }
                if (error != null) {
                    // One line per failed write, without a stack trace: during an outage every
                    // write fails the same way, and each caller receives the exception itself.
                    // A failure the callers' loops ride out (a lost connection, a failover) is a
                    // WARN: during a failover an ERROR per merged claim would bury the one that matters.
                    String message = error.getMessage() != null ? error.getMessage() : error.toString();
                    if (policy.callersLog()) {
                        log.debug("group-committed {} of {} submissions on queue {} failed: {}", operation, batch.size(),
                                name, message);
                    } else if (SqlStates.isTransient(error)) {
                        log.warn("group-committed {} of {} submissions on queue {} failed: {}", operation, batch.size(),
                                name, message);
                    } else {
                        log.error("group-committed {} of {} submissions on queue {} failed: {}", operation, batch.size(),
                                name, message);
                    }
                    log.debug("group-committed {} failure on queue {}", operation, name, error);
                }
            }

            /**
             * Signals every caller, each in isolation: a caller's code runs on this thread when
             * signalled, and whatever it throws must reach neither the other callers nor the drain.
             */
            private void signal(List<R> results, @Nullable Throwable error) {
                Throwable firstThrown = null;
                int throwers = 0;
                int next = 0;
                for (Submission s : batch) {
                    if (s.payload != null && s.write != this) {
                        continue; // cancelled before the write started; it was not written
                    }
                    R result = error == null && s.payload != null ? results.get(next++) : null;
                    try {
                        if (!s.state.compareAndSet(WAITING, SIGNALLED)) {
                            if (result != null) {
                                policy.unclaimed().accept(result);
                            }
                        } else if (error != null) {
                            s.done.tryEmitError(error);
                        } else if (result == null) {
                            s.done.tryEmitEmpty();
                        } else {
                            s.done.tryEmitValue(result);
                        }
                    } catch (Throwable thrown) {
                        if (throwers++ == 0) {
                            firstThrown = thrown;
                        }
                    }
                }
                if (firstThrown != null) {
                    // Logged once per write, with the first trace: a caller that throws usually
                    // does so for every write, and the log should not scale with the callers.
                    log.error("{} of {} callers of a group-committed {} on queue {} threw when signalled;"
                            + " the others were signalled and the group commit carries on", throwers, batch.size(),
                            operation, name, firstThrown);
                }
            }
        }
    }
}
