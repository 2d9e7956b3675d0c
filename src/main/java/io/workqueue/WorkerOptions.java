package io.workqueue;

import io.workqueue.internal.Durations;
import java.time.Duration;
import java.util.Objects;
import java.util.function.IntFunction;

/**
 * How a worker started by {@link ReactiveWorkQueue#process} runs. Immutable; the canonical
 * constructor (and so {@link Builder#build()}) refuses bad values with an
 * {@link InvalidConfigException} naming the field. A lease or poll longer than
 * {@link ReactiveWorkQueue#MAX_DURATION} means "forever" and is stored as {@code MAX_DURATION}.
 *
 * @param concurrency how many handlers may run at once, which is also the most leases the worker
 *                    holds; at least 1
 * @param lease       the lease each claim takes; positive, at most
 *                    {@link ReactiveWorkQueue#MAX_DURATION}. Longer than a handler's worst case:
 *                    a handler still running when its lease ends is cancelled (its item has
 *                    lapsed and is handed out again), and its slot freed
 * @param poll        how long to wait for a wakeup after a claim comes back short; positive, at
 *                    most {@link ReactiveWorkQueue#MAX_DURATION}
 * @param claimBatch  the most items one claim asks for (never more than the free handler slots);
 *                    at least 1
 * @param backoff     the delay before a failed item is due again, given its attempts so far
 *                    (1 after the first claim); negative means now. A function that throws or
 *                    returns null is replaced for that item by {@link #exponentialBackoff}, and
 *                    the item is still released
 */
public record WorkerOptions(int concurrency, Duration lease, Duration poll, int claimBatch,
        IntFunction<Duration> backoff) {

    /** Validates every field, and caps the lease and poll at {@link ReactiveWorkQueue#MAX_DURATION}. */
    public WorkerOptions {
        if (concurrency < 1) {
            throw new InvalidConfigException("concurrency must be at least 1 but was " + concurrency);
        }
        requirePositive("lease", lease);
        requirePositive("poll", poll);
        lease = Durations.capped(lease);
        poll = Durations.capped(poll);
        if (claimBatch < 1) {
            throw new InvalidConfigException("claimBatch must be at least 1 but was " + claimBatch);
        }
        if (backoff == null) {
            throw new InvalidConfigException("backoff must not be null");
        }
    }

    /**
     * Starts from the defaults: concurrency 16, lease 30 s, poll 1 s, claim batch 100, and a back-off
     * of one second doubling with each attempt up to five minutes.
     */
    public static Builder builder() {
        return new Builder();
    }

    /** The default back-off: 1 s, 2 s, 4 s, ... capped at 5 minutes. */
    public static Duration exponentialBackoff(int attempts) {
        int exponent = Math.max(0, Math.min(attempts - 1, 16));
        Duration delay = Duration.ofSeconds(1L << exponent);
        Duration cap = Duration.ofMinutes(5);
        return delay.compareTo(cap) > 0 ? cap : delay;
    }

    private static void requirePositive(String field, Duration value) {
        if (value == null || value.isZero() || value.isNegative()) {
            throw new InvalidConfigException(field + " must be positive but was " + value);
        }
    }

    /** Collects {@link WorkerOptions}. Not thread-safe. */
    public static final class Builder {
        private int concurrency = 16;
        private Duration lease = Duration.ofSeconds(30);
        private Duration poll = Duration.ofSeconds(1);
        private int claimBatch = 100;
        private IntFunction<Duration> backoff = WorkerOptions::exponentialBackoff;

        private Builder() {}

        /** Handlers running at once; default 16. */
        public Builder concurrency(int concurrency) {
            this.concurrency = concurrency;
            return this;
        }

        /**
         * Lease per claim; default 30 s. Longer than {@link ReactiveWorkQueue#MAX_DURATION} is taken
         * as {@code MAX_DURATION}.
         */
        public Builder lease(Duration lease) {
            this.lease = lease;
            return this;
        }

        /**
         * Wait after a short claim; default 1 s. Longer than {@link ReactiveWorkQueue#MAX_DURATION}
         * is taken as {@code MAX_DURATION}.
         */
        public Builder poll(Duration poll) {
            this.poll = poll;
            return this;
        }

        /** Most items per claim; default 100. */
        public Builder claimBatch(int claimBatch) {
            this.claimBatch = claimBatch;
            return this;
        }

        /** Delay before a failed item is due again, by attempts; default {@link #exponentialBackoff}. */
        public Builder backoff(IntFunction<Duration> backoff) {
            this.backoff = Objects.requireNonNull(backoff, "backoff");
            return this;
        }

        /**
         * The options.
         *
         * @throws InvalidConfigException naming the first field out of range
         */
        public WorkerOptions build() {
            return new WorkerOptions(concurrency, lease, poll, claimBatch, backoff);
        }
    }
}
