package io.workqueue;

import java.time.Duration;
import java.util.Collections;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * One item as {@link WorkQueueAdmin} sees it: its key, where it stands and why, read in one
 * statement. Every age is measured on the database clock at the moment of that statement, so the
 * ages of the items of one page are comparable with each other.
 *
 * <p>Immutable and thread-safe. A final class with a builder rather than a record, so that it can
 * gain fields; it is built by the admin, and by tests.
 */
public final class QueueItem {
    private final String queue;
    private final String storedKey;
    private final Object key;
    private final @Nullable String keyDecodingError;
    private final int priority;
    private final int attempts;
    private final @Nullable String lastError;
    private final Duration age;
    private final Duration availableIn;
    private final @Nullable Duration leaseRemaining;
    private final @Nullable Duration completedAgo;
    private final boolean requeueRequested;
    private final boolean leaseLapsed;
    private final Set<ItemState> states;

    private QueueItem(Builder b) {
        this.queue = Objects.requireNonNull(b.queue, "queue");
        this.storedKey = Objects.requireNonNull(b.storedKey, "storedKey");
        this.key = b.key != null ? b.key : b.storedKey;
        this.keyDecodingError = b.keyDecodingError;
        this.priority = b.priority;
        this.attempts = b.attempts;
        this.lastError = b.lastError;
        this.age = Objects.requireNonNull(b.age, "age");
        this.availableIn = Objects.requireNonNull(b.availableIn, "availableIn");
        this.leaseRemaining = b.leaseRemaining;
        this.completedAgo = b.completedAgo;
        this.requeueRequested = b.requeueRequested;
        this.leaseLapsed = b.leaseLapsed;
        this.states = Collections.unmodifiableSet(b.states.isEmpty() ? EnumSet.noneOf(ItemState.class) : EnumSet.copyOf(b.states));
    }

    /**
     * Starts building an item of {@code queue} whose key is stored as {@code storedKey}. The admin
     * builds items; this is public for tests, fakes and other implementations of
     * {@link WorkQueueAdmin}.
     *
     * @param queue     see {@link #queue()}
     * @param storedKey see {@link #storedKey()}
     * @return a new builder, its durations zero, its flags false and its states empty
     * @throws NullPointerException if {@code queue} or {@code storedKey} is {@code null}
     */
    public static Builder builder(String queue, String storedKey) {
        return new Builder(queue, storedKey);
    }

    /**
     * The logical queue the item belongs to.
     *
     * @return the queue's name, as {@link QueueSummary#name()} gives it
     */
    public String queue() {
        return queue;
    }

    /**
     * The key exactly as stored in the table: what the admin's actions take, and what identifies
     * the item whatever codec reads it.
     *
     * @return the stored key, as {@link WorkQueueAdmin#retry} and {@link WorkQueueAdmin#remove}
     *         take it
     */
    public String storedKey() {
        return storedKey;
    }

    /**
     * The key: decoded by the queue's {@link KeyCodec} when the admin was given one and it reads
     * the stored key, else the stored key itself (a {@code String}); see {@link #keyDecodingError()}.
     *
     * @return the decoded key, or {@link #storedKey()} when there is no codec or it refused the key
     */
    public Object key() {
        return key;
    }

    /**
     * Why the queue's codec could not decode the stored key (its exception's description), or
     * {@code null} when it could or when no codec was given. Such an item is listed like any other,
     * under its stored key.
     *
     * @return the codec's failure, cut to 1024 code points by the admin, or {@code null}
     */
    public @Nullable String keyDecodingError() {
        return keyDecodingError;
    }

    /**
     * The item's priority; claims hand out higher priorities first.
     *
     * @return the priority; while the item is pending, enqueues of its key can only raise it
     */
    public int priority() {
        return priority;
    }

    /**
     * Claims of the item since it was enqueued, restarted or retried.
     *
     * @return zero or more; once it reaches a non-zero attempt limit
     *         ({@link QueueSummary#maxAttempts()}) the item is {@link ItemState#STALLED}
     */
    public int attempts() {
        return attempts;
    }

    /**
     * The error recorded by the last release (a failed run, an undecodable key), or {@code null};
     * a completion clears it, and a retry by the admin keeps it.
     *
     * @return the last error, at most 1024 code points as the queue stores it, or {@code null}
     */
    public @Nullable String lastError() {
        return lastError;
    }

    /**
     * How long ago the item was enqueued (or restarted after completing).
     *
     * @return the age on the database clock, to the microsecond
     */
    public Duration age() {
        return age;
    }

    /**
     * How long until the item is available: positive while it is delayed, negative for how long it
     * has been available.
     *
     * @return the time to availability on the database clock, to the microsecond; zero or
     *         negative once it is available
     */
    public Duration availableIn() {
        return availableIn;
    }

    /**
     * What is left of its live lease, or {@code null} when it is not leased.
     *
     * @return a positive duration while {@link ItemState#LEASED}, else {@code null} (never leased,
     *         released, completed, or the lease lapsed: see {@link #leaseLapsed()})
     */
    public @Nullable Duration leaseRemaining() {
        return leaseRemaining;
    }

    /**
     * How long ago it was completed, or {@code null} while it is pending.
     *
     * @return the time since completion on the database clock while {@link ItemState#COMPLETED},
     *         else {@code null}
     */
    public @Nullable Duration completedAgo() {
        return completedAgo;
    }

    /**
     * Whether it was enqueued again while leased: completing that lease runs it once more (see
     * {@link ReactiveWorkQueue#complete(java.util.Collection)}).
     *
     * @return {@code true} if completing the current lease hands the item back to run once more
     */
    public boolean requeueRequested() {
        return requeueRequested;
    }

    /**
     * Whether its last lease ran out without being completed or released: the worker died or was
     * too slow, and the next claim of it is a reclaim ({@link Item#reclaimed()}).
     *
     * @return {@code true} if the item was leased and the lease ran out; {@code false} if it was
     *         never leased, is leased now, or was released or completed
     */
    public boolean leaseLapsed() {
        return leaseLapsed;
    }

    /**
     * The states the item is in: one, or both {@link ItemState#LEASED} and {@link ItemState#STALLED}
     * for an item leased for its last attempt.
     *
     * @return an unmodifiable set of one or two states, as decided on the database clock when the
     *         item was read
     */
    public Set<ItemState> states() {
        return states;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof QueueItem that
                && queue.equals(that.queue) && storedKey.equals(that.storedKey) && key.equals(that.key)
                && Objects.equals(keyDecodingError, that.keyDecodingError)
                && priority == that.priority && attempts == that.attempts
                && Objects.equals(lastError, that.lastError) && age.equals(that.age)
                && availableIn.equals(that.availableIn) && Objects.equals(leaseRemaining, that.leaseRemaining)
                && Objects.equals(completedAgo, that.completedAgo) && requeueRequested == that.requeueRequested
                && leaseLapsed == that.leaseLapsed && states.equals(that.states);
    }

    @Override
    public int hashCode() {
        return Objects.hash(queue, storedKey, priority, attempts, states);
    }

    @Override
    public String toString() {
        return "QueueItem[queue=" + queue + ", storedKey=" + storedKey + ", states=" + states + ", priority="
                + priority + ", attempts=" + attempts + ", lastError=" + lastError + ", age=" + age
                + ", availableIn=" + availableIn + ", leaseRemaining=" + leaseRemaining + ", completedAgo="
                + completedAgo + ", requeueRequested=" + requeueRequested + ", leaseLapsed=" + leaseLapsed
                + (keyDecodingError == null ? "" : ", keyDecodingError=" + keyDecodingError) + "]";
    }

    /** Assembles a {@link QueueItem}; not thread-safe. Unset durations are zero, unset flags false. */
    public static final class Builder {
        private final String queue;
        private final String storedKey;
        private @Nullable Object key;
        private @Nullable String keyDecodingError;
        private int priority;
        private int attempts;
        private @Nullable String lastError;
        private Duration age = Duration.ZERO;
        private Duration availableIn = Duration.ZERO;
        private @Nullable Duration leaseRemaining;
        private @Nullable Duration completedAgo;
        private boolean requeueRequested;
        private boolean leaseLapsed;
        private final Set<ItemState> states = EnumSet.noneOf(ItemState.class);

        private Builder(String queue, String storedKey) {
            this.queue = Objects.requireNonNull(queue, "queue");
            this.storedKey = Objects.requireNonNull(storedKey, "storedKey");
        }

        /**
         * Sets the decoded key; unset or {@code null} means the stored key. See
         * {@link QueueItem#key()}.
         *
         * @param key the key as the queue's codec decodes it, or {@code null}
         * @return this builder
         */
        public Builder key(@Nullable Object key) {
            this.key = key;
            return this;
        }

        /**
         * Sets why the codec could not decode the key; see {@link QueueItem#keyDecodingError()}.
         *
         * @param error the codec's failure, or {@code null} (the default) for none
         * @return this builder
         */
        public Builder keyDecodingError(@Nullable String error) {
            this.keyDecodingError = error;
            return this;
        }

        /**
         * Sets the priority; see {@link QueueItem#priority()}.
         *
         * @param priority the item's priority; default 0
         * @return this builder
         */
        public Builder priority(int priority) {
            this.priority = priority;
            return this;
        }

        /**
         * Sets the attempts; see {@link QueueItem#attempts()}.
         *
         * @param attempts claims since the item was enqueued, restarted or retried; default 0
         * @return this builder
         */
        public Builder attempts(int attempts) {
            this.attempts = attempts;
            return this;
        }

        /**
         * Sets the last error; see {@link QueueItem#lastError()}.
         *
         * @param lastError the error recorded by the last release, or {@code null} (the default)
         * @return this builder
         */
        public Builder lastError(@Nullable String lastError) {
            this.lastError = lastError;
            return this;
        }

        /**
         * Sets the age; see {@link QueueItem#age()}.
         *
         * @param age how long ago the item was enqueued; default zero
         * @return this builder
         * @throws NullPointerException if {@code age} is {@code null}
         */
        public Builder age(Duration age) {
            this.age = Objects.requireNonNull(age, "age");
            return this;
        }

        /**
         * Sets the time to availability; see {@link QueueItem#availableIn()}.
         *
         * @param availableIn positive while delayed, zero or negative once available; default zero
         * @return this builder
         * @throws NullPointerException if {@code availableIn} is {@code null}
         */
        public Builder availableIn(Duration availableIn) {
            this.availableIn = Objects.requireNonNull(availableIn, "availableIn");
            return this;
        }

        /**
         * Sets what is left of the lease; see {@link QueueItem#leaseRemaining()}.
         *
         * @param leaseRemaining the rest of the live lease, or {@code null} (the default) when not
         *                       leased
         * @return this builder
         */
        public Builder leaseRemaining(@Nullable Duration leaseRemaining) {
            this.leaseRemaining = leaseRemaining;
            return this;
        }

        /**
         * Sets how long ago the item was completed; see {@link QueueItem#completedAgo()}.
         *
         * @param completedAgo the time since completion, or {@code null} (the default) while
         *                     pending
         * @return this builder
         */
        public Builder completedAgo(@Nullable Duration completedAgo) {
            this.completedAgo = completedAgo;
            return this;
        }

        /**
         * Sets whether the item was enqueued again while leased; see
         * {@link QueueItem#requeueRequested()}.
         *
         * @param requeueRequested whether completing the lease runs it once more; default false
         * @return this builder
         */
        public Builder requeueRequested(boolean requeueRequested) {
            this.requeueRequested = requeueRequested;
            return this;
        }

        /**
         * Sets whether the last lease ran out; see {@link QueueItem#leaseLapsed()}.
         *
         * @param leaseLapsed whether the next claim is a reclaim; default false
         * @return this builder
         */
        public Builder leaseLapsed(boolean leaseLapsed) {
            this.leaseLapsed = leaseLapsed;
            return this;
        }

        /**
         * Adds {@code state} to {@link QueueItem#states()}; adding one twice changes nothing.
         *
         * @param state a state the item is in
         * @return this builder
         * @throws NullPointerException if {@code state} is {@code null}
         */
        public Builder state(ItemState state) {
            this.states.add(Objects.requireNonNull(state, "state"));
            return this;
        }

        /**
         * Builds the item. The builder may go on being used: a later change does not reach the
         * items already built.
         *
         * @return a new immutable item; its {@link QueueItem#key()} is the stored key if no key was
         *         set
         */
        public QueueItem build() {
            return new QueueItem(this);
        }
    }
}
