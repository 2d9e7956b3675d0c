package io.workqueue;

import io.workqueue.internal.base.Durations;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.function.IntFunction;
import org.jspecify.annotations.Nullable;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * The settings of one worker started by {@link ReactiveWorkQueue#process}: how many handlers run
 * at once, the lease each claim takes, how long to wait when the queue is empty, how much one claim
 * asks for, how long a failed item waits before it is due again, and on which threads handlers run.
 *
 * <p>Immutable and thread-safe (as long as the back-off function is). Every instance is valid:
 * {@link Builder#build()} refuses a bad value with an {@link InvalidConfigException} that names the
 * field and the value. A lease or poll longer than {@link ReactiveWorkQueue#MAX_DURATION} means
 * "forever" and is stored as {@code MAX_DURATION}.
 *
 * <p><b>Growth.</b> A final class built only through {@link #builder()} (or {@link #toBuilder()}),
 * never through a constructor, so that a later release can add a setting without breaking code
 * compiled against this one. Equality is by value; the back-off function and the handler scheduler
 * compare by identity.
 */
public final class WorkerOptions {

    private static final int DEFAULT_CONCURRENCY = 16;
    private static final Duration DEFAULT_LEASE = Duration.ofSeconds(30);
    private static final Duration DEFAULT_POLL = Duration.ofSeconds(1);
    private static final int DEFAULT_CLAIM_BATCH = 100;
    private static final Duration FIRST_BACKOFF = Duration.ofSeconds(1);
    private static final Duration MAX_BACKOFF = Duration.ofMinutes(5);

    private final int concurrency;
    private final Duration lease;
    private final Duration poll;
    private final int claimBatch;
    private final IntFunction<Duration> backoff;
    private final @Nullable Scheduler handlerScheduler;
    private final @Nullable Duration restartBackoff;
    private final Duration maxRestartBackoff;
    private final @Nullable Duration maxRunTime;

    /** Validates the builder's values and caps the lease and poll; the only way an instance is made. */
    private WorkerOptions(Builder b) {
        if (b.concurrency < 1) {
            throw new InvalidConfigException("concurrency must be at least 1 but was " + b.concurrency);
        }
        this.concurrency = b.concurrency;
        String leaseProblem = Durations.leaseProblem(b.lease);
        if (leaseProblem != null) {
            throw new InvalidConfigException(leaseProblem);
        }
        this.lease = Durations.capped(Objects.requireNonNull(b.lease));
        this.poll = Durations.capped(requirePositive("poll", b.poll));
        if (b.claimBatch < 1) {
            throw new InvalidConfigException("claimBatch must be at least 1 but was " + b.claimBatch);
        }
        this.claimBatch = b.claimBatch;
        IntFunction<Duration> function = b.backoff;
        if (function == null) {
            throw new InvalidConfigException("backoff must not be null but was null; the default is"
                    + " WorkerOptions::exponentialBackoff");
        }
        this.backoff = function;
        if (b.handlerSchedulerSet && b.handlerScheduler == null) {
            throw new InvalidConfigException("handlerScheduler must not be null but was null; leave it unset for"
                    + " the worker's own pool");
        }
        this.handlerScheduler = b.handlerScheduler;
        if (b.restartBackoff != null) {
            this.restartBackoff = Durations.capped(requirePositive("restartBackoff", b.restartBackoff));
            if (b.maxRestartBackoff == null || b.maxRestartBackoff.compareTo(b.restartBackoff) < 0) {
                throw new InvalidConfigException("maxRestartBackoff must be at least restartBackoff ("
                        + b.restartBackoff + ") but was " + b.maxRestartBackoff);
            }
            this.maxRestartBackoff = Durations.capped(b.maxRestartBackoff);
        } else {
            this.restartBackoff = null;
            this.maxRestartBackoff = Duration.ZERO;
        }
        this.maxRunTime = b.maxRunTime == null ? null : Durations.capped(requirePositive("maxRunTime", b.maxRunTime));
    }

    /**
     * Starts a builder from the defaults: concurrency 16, lease 30 s, poll 1 s, claim batch 100,
     * {@link #exponentialBackoff} (one second doubling with each attempt up to five minutes), and
     * handlers on the worker's own pool (see {@link #handlerScheduler()}).
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Starts a builder holding every setting of these options, to derive others from them.
     *
     * @return a new builder; changing it does not change these options
     */
    public Builder toBuilder() {
        Builder builder = new Builder();
        builder.concurrency = concurrency;
        builder.lease = lease;
        builder.poll = poll;
        builder.claimBatch = claimBatch;
        builder.backoff = backoff;
        builder.handlerScheduler = handlerScheduler;
        builder.handlerSchedulerSet = handlerScheduler != null;
        builder.restartBackoff = restartBackoff;
        builder.maxRestartBackoff = restartBackoff == null ? null : maxRestartBackoff;
        builder.maxRunTime = maxRunTime;
        return builder;
    }

    /**
     * The default back-off: one second after the first attempt, doubling with each attempt after
     * that (2 s, 4 s, ...), never more than five minutes.
     *
     * @param attempts the item's claims so far, this one included (1 after the first claim);
     *                 zero or less is taken as 1
     * @return the delay before the item is due again, between one second and five minutes
     */
    public static Duration exponentialBackoff(int attempts) {
        return Durations.doubled(attempts, FIRST_BACKOFF, MAX_BACKOFF);
    }

    /**
     * A back-off that starts at {@code first} after the first attempt and doubles with each attempt
     * after that, never more than {@code max}: {@link #exponentialBackoff(int)} is this with one
     * second and five minutes. For {@link Builder#backoff}.
     *
     * @param first the delay after the first attempt; zero or more (zero makes a failed item due
     *              again at once, however often it fails)
     * @param max   the longest delay; at least {@code first}
     * @return the back-off function: from an item's attempts (1 after the first claim; zero or
     *         less is taken as 1) to its delay
     * @throws InvalidConfigException if {@code first} is null or negative, or {@code max} is null
     *                                or shorter
     */
    public static IntFunction<Duration> exponentialBackoff(Duration first, Duration max) {
        if (first == null || first.isNegative()) {
            throw new InvalidConfigException("first must be zero or more but was " + first);
        }
        Duration from = first;
        if (max == null || max.compareTo(from) < 0) {
            throw new InvalidConfigException("max must be at least first (" + first + ") but was " + max);
        }
        Duration to = Durations.capped(max);
        return attempts -> Durations.doubled(attempts, from, to);
    }

    /**
     * How many handlers may run at once, which is also the most leases the worker holds.
     *
     * @return at least 1; 16 by default
     */
    public int concurrency() {
        return concurrency;
    }

    /**
     * The lease each claim takes. Make it longer than a handler's worst case: a handler still
     * running when its lease ends is cancelled (its item has lapsed and is handed out again), and
     * its slot freed.
     *
     * @return positive, at most {@link ReactiveWorkQueue#MAX_DURATION}; 30 seconds by default
     */
    public Duration lease() {
        return lease;
    }

    /**
     * How long the worker waits for a wakeup after a claim comes back short, before claiming
     * again.
     *
     * @return positive, at most {@link ReactiveWorkQueue#MAX_DURATION}; one second by default
     */
    public Duration poll() {
        return poll;
    }

    /**
     * The most items one claim asks for; a claim never asks for more than the free handler slots.
     *
     * @return at least 1; 100 by default
     */
    public int claimBatch() {
        return claimBatch;
    }

    /**
     * The delay before a failed item is due again, as a function of its attempts so far (1 after
     * the first claim); a negative delay means now. A function that throws or returns
     * {@code null} is replaced for that item by {@link #exponentialBackoff}, and the item is still
     * released.
     *
     * @return the back-off function; {@link #exponentialBackoff} by default
     */
    public IntFunction<Duration> backoff() {
        return backoff;
    }

    /**
     * Where handlers run: the scheduler on which the worker calls the handler and subscribes to
     * what it returns, or empty for the default, a pool of the worker's own.
     *
     * <p><b>The default: a pool per worker, sized by its concurrency.</b> Each subscription of
     * {@code process} gets a bounded-elastic pool of at most {@link #concurrency()} threads (named
     * {@code workqueue-<queue name>-<n>}), started as handlers need them, ended after 60 s idle,
     * and shut down gracefully when the worker's stream ends (handlers still running finish).
     * Blocking is allowed there, and BlockHound permits it. So a handler that blocks costs only its
     * own slot: with concurrency 16, sixteen blocking handlers block at once, and the driver's
     * threads stay free for enqueues, other queues' claims and health checks. Not the shared
     * {@code Schedulers.boundedElastic()}: its threads are capped at ten per core for the whole JVM
     * and shared with everything else there, so one queue's blocked handlers would hold up another
     * queue's, and the application's own blocking work.
     *
     * <p><b>What the hand-off costs.</b> The calls of one claim are handed over together: one pool
     * thread makes them one after another, so a batch of quick handlers costs one thread hand-off,
     * not one per item, and the worker acknowledges the batch in one statement as before. When a
     * call has kept every thread busy for a millisecond with others waiting (it blocks, or computes
     * for long), the worker doubles the threads working through the batch, up to
     * {@code concurrency}. What remains is a hand-off per claim and back, and up to
     * {@code concurrency} threads per running worker while handlers block; it shows most with small
     * claim batches (measured in {@code docs/benchmarks/handler-scheduler/}). A handler still
     * blocking its thread when its lease ends is interrupted, as {@code subscribeOn} does on
     * cancellation; one that ignores the interrupt keeps its thread, and the worker has one thread
     * fewer than slots until it returns.
     *
     * <p><b>A scheduler of your own</b> is used the same way (the calls of a claim handed over
     * together, at most {@code concurrency} of its threads at once) and never disposed by the
     * worker; {@code Schedulers.boundedElastic()} shares the JVM's pool. {@link Schedulers#immediate()}
     * runs handlers in the worker's loop, where the claim was delivered, on the database driver's
     * event-loop threads, with no hand-off: the cheapest choice for handlers that never block. There,
     * a handler that blocks stalls every statement of the process on that thread; the worker
     * measures how long each call ({@code handler.apply(item)} and the synchronous part of
     * subscribing) held a driver or other non-blocking Reactor thread, and logs a WARN naming the
     * queue, the handler (its {@code toString()}) and the time when it exceeds 100 ms (at most once
     * a minute per worker, with a count of the others).
     *
     * @return the scheduler handlers run on, or empty for the worker's own pool (the default)
     */
    public Optional<Scheduler> handlerScheduler() {
        return Optional.ofNullable(handlerScheduler);
    }

    /**
     * The first delay before the worker is started again after its stream ended on an error, or
     * empty if it is not restarted (the default: the stream ends with the error, as any
     * {@code Flux} does).
     *
     * <p>A worker's stream ends on an error only when the database fails in a way the library does
     * not retry: the table is gone or older than the library, the role lost its rights, and the
     * like. A service usually wants its worker back once the cause is fixed, without a restart of
     * its own; with a restart back-off, {@code process} logs the error at WARN (naming the queue
     * and the handler) and subscribes a fresh worker after a delay that doubles from this one up to
     * {@link #maxRestartBackoff()} (with a random spread of up to half, so a fleet does not retry
     * in step), starting again from this one once a worker has completed an item. The stream then
     * never ends on an error; a graceful stop still ends it, during a back-off too. Items a failed
     * worker held are handed out again as their leases lapse, as always.
     *
     * @return the first restart delay, or empty for no restarts (the default)
     */
    public Optional<Duration> restartBackoff() {
        return Optional.ofNullable(restartBackoff);
    }

    /**
     * The longest delay between restarts of a worker whose stream keeps ending on an error: see
     * {@link #restartBackoff()}.
     *
     * @return the ceiling of the restart delay; zero when the worker is not restarted
     */
    public Duration maxRestartBackoff() {
        return maxRestartBackoff;
    }

    /**
     * How long a handler may run while the worker keeps its lease alive. Off by default: a handler
     * still running when its lease ends is cancelled, and its item lapses to whoever reclaims it.
     *
     * <p>With a maximum run time, the worker extends the lease of each handler still running once
     * a third of its lease has passed ({@link ReactiveWorkQueue#extend}, on the database clock, again
     * and again; the extensions of all of a worker's running handlers due in one tick share one
     * statement, and the queue's group commit merges them with other workers'), so long work runs
     * under a short lease: if the process dies, its items lapse one lease after the last extension,
     * not one long lease after the claim. A handler still running {@code maxRunTime} after its
     * claim is cancelled and its item released with a {@link java.util.concurrent.TimeoutException}
     * as its last error (the attempt counts; the back-off applies). If an extension finds the lease
     * no longer the worker's (it lapsed, say through a long pause of this process, and another
     * worker may have claimed the item), the handler is cancelled and whatever it finishes is
     * discarded, counted by {@code workqueue.extensions.refused}. An extension that fails (the
     * database unreachable) is tried again at the next tick; if none succeeds, the handler is
     * cancelled when its lease ends, as without a maximum.
     *
     * @return the maximum run time, or empty for none (the default)
     */
    public Optional<Duration> maxRunTime() {
        return Optional.ofNullable(maxRunTime);
    }

    /**
     * Whether {@code other} holds the same settings (the same back-off function instance).
     *
     * @param other any object, or {@code null}
     * @return {@code true} if every setting is equal
     */
    @Override
    public boolean equals(@Nullable Object other) {
        return other instanceof WorkerOptions that
                && concurrency == that.concurrency
                && lease.equals(that.lease)
                && poll.equals(that.poll)
                && claimBatch == that.claimBatch
                && backoff.equals(that.backoff)
                && handlerScheduler == that.handlerScheduler
                && Objects.equals(restartBackoff, that.restartBackoff)
                && maxRestartBackoff.equals(that.maxRestartBackoff)
                && Objects.equals(maxRunTime, that.maxRunTime);
    }

    /**
     * A hash over every setting, consistent with {@link #equals}.
     *
     * @return the hash code
     */
    @Override
    public int hashCode() {
        return Objects.hash(concurrency, lease, poll, claimBatch, backoff, System.identityHashCode(handlerScheduler),
                restartBackoff, maxRestartBackoff, maxRunTime);
    }

    /**
     * Every setting by name, for logs.
     *
     * @return {@code WorkerOptions[concurrency=..., lease=..., ...]}
     */
    @Override
    public String toString() {
        return "WorkerOptions[concurrency=" + concurrency + ", lease=" + lease + ", poll=" + poll
                + ", claimBatch=" + claimBatch + ", backoff=" + backoff + ", handlerScheduler="
                + (handlerScheduler == null ? "worker's own pool" : handlerScheduler) + ", restart="
                + (restartBackoff == null ? "never" : restartBackoff + " to " + maxRestartBackoff) + ", maxRunTime="
                + (maxRunTime == null ? "the lease" : maxRunTime) + "]";
    }

    private static Duration requirePositive(String field, @Nullable Duration value) {
        return Durations.requirePositive(field, value, InvalidConfigException::new);
    }

    /**
     * Collects the settings of {@link WorkerOptions}, starting from the defaults. Not thread-safe.
     * Setters only record, and the last value given for a setting wins; every value is checked by
     * {@link #build()}, which throws {@link InvalidConfigException} for the first one out of
     * range, naming it and its value. A setter never throws.
     */
    public static final class Builder {
        private int concurrency = DEFAULT_CONCURRENCY;
        private @Nullable Duration lease = DEFAULT_LEASE;
        private @Nullable Duration poll = DEFAULT_POLL;
        private int claimBatch = DEFAULT_CLAIM_BATCH;
        private @Nullable IntFunction<Duration> backoff = WorkerOptions::exponentialBackoff;
        private @Nullable Scheduler handlerScheduler;
        /** Whether {@link #handlerScheduler(Scheduler)} was called, so that a null given there is refused. */
        private boolean handlerSchedulerSet;
        private @Nullable Duration restartBackoff;
        private @Nullable Duration maxRestartBackoff;
        private @Nullable Duration maxRunTime;

        private Builder() {}

        /**
         * Sets how many handlers run at once (and so the most leases held); default 16, at least 1.
         *
         * @param concurrency handlers running at once
         * @return this builder
         */
        public Builder concurrency(int concurrency) {
            this.concurrency = concurrency;
            return this;
        }

        /**
         * Sets the lease each claim takes; default 30 s, at least 1 microsecond (the database
         * clock's resolution: a shorter lease would end as it began). Longer than
         * {@link ReactiveWorkQueue#MAX_DURATION} is taken as {@code MAX_DURATION}.
         *
         * @param lease the lease per claim
         * @return this builder
         */
        public Builder lease(Duration lease) {
            this.lease = lease;
            return this;
        }

        /**
         * Sets the wait for a wakeup after a short claim; default 1 s, positive. Longer than
         * {@link ReactiveWorkQueue#MAX_DURATION} is taken as {@code MAX_DURATION}.
         *
         * @param poll the longest wait between claims on an empty queue
         * @return this builder
         */
        public Builder poll(Duration poll) {
            this.poll = poll;
            return this;
        }

        /**
         * Sets the most items one claim asks for; default 100, at least 1.
         *
         * @param claimBatch the most items per claim
         * @return this builder
         */
        public Builder claimBatch(int claimBatch) {
            this.claimBatch = claimBatch;
            return this;
        }

        /**
         * Sets the delay before a failed item is due again, by its attempts; default
         * {@link WorkerOptions#exponentialBackoff}. See {@link WorkerOptions#backoff()}.
         *
         * @param backoff from attempts (1 after the first claim) to delay; never {@code null}
         * @return this builder
         */
        public Builder backoff(IntFunction<Duration> backoff) {
            this.backoff = backoff;
            return this;
        }

        /**
         * Runs handlers on {@code scheduler} instead of the worker's own pool; see
         * {@link WorkerOptions#handlerScheduler()} for what each choice costs.
         * {@code Schedulers.immediate()} runs them on the database driver's threads, where a
         * handler must never block.
         *
         * @param scheduler where to call handlers and subscribe to their publishers; never
         *                  {@code null}; the worker never disposes it
         * @return this builder
         */
        public Builder handlerScheduler(Scheduler scheduler) {
            this.handlerScheduler = scheduler;
            this.handlerSchedulerSet = true;
            return this;
        }

        /**
         * Restarts the worker after its stream ends on an error, after a delay doubling from
         * {@code first} to {@code max}: see {@link WorkerOptions#restartBackoff()}. Off by default.
         *
         * @param first the delay before the first restart; positive
         * @param max   the longest delay; at least {@code first}
         * @return this builder
         */
        public Builder restartOnError(Duration first, Duration max) {
            this.restartBackoff = first;
            this.maxRestartBackoff = max;
            return this;
        }

        /**
         * Keeps running handlers' leases alive for up to {@code maxRunTime} after their claim: see
         * {@link WorkerOptions#maxRunTime()}. Off by default.
         *
         * @param maxRunTime the longest a handler may run; positive (longer than
         *                   {@link ReactiveWorkQueue#MAX_DURATION} is taken as {@code MAX_DURATION}),
         *                   or {@code null} for none, the default
         * @return this builder
         */
        public Builder maxRunTime(@Nullable Duration maxRunTime) {
            this.maxRunTime = maxRunTime;
            return this;
        }

        /**
         * Checks every setting and returns the options. Can be called again, after more setters,
         * for other options.
         *
         * @return valid options
         * @throws InvalidConfigException naming the first setting out of range and its value
         */
        public WorkerOptions build() {
            return new WorkerOptions(this);
        }
    }
}
