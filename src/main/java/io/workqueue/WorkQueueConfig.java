package io.workqueue;

import io.workqueue.internal.base.Durations;
import io.workqueue.internal.base.Identifiers;
import io.workqueue.internal.base.TableNames;
import io.workqueue.migrations.WorkQueueMigrations;
import java.time.Duration;
import java.util.Locale;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The settings of one logical queue: its name, its table, and the bounds its statements work
 * within. Hand one to {@link WorkQueueBuilder#config} (and to
 * {@link WorkQueueMigrations#apply(io.r2dbc.spi.ConnectionFactory, WorkQueueConfig)}, so the table
 * prefix is stated once).
 *
 * <p>Immutable and thread-safe. Every instance is valid: {@link Builder#build()} refuses a bad value
 * with an {@link InvalidConfigException} that names the field and the value, and nothing is
 * silently replaced by a default. Durations have no upper limit to refuse: one longer than
 * {@link ReactiveWorkQueue#MAX_DURATION} means "forever" and is stored, and acted on, as
 * {@code MAX_DURATION}, so the accessors return at most that.
 *
 * <p><b>Growth.</b> A final class built only through {@link #builder(String)} (or
 * {@link #toBuilder()}), never through a constructor, so that a later release can add a setting —
 * a builder method and an accessor, with a default — without breaking code compiled against this
 * one. Equality is by value, over every setting.
 */
public final class WorkQueueConfig {

    /** The longest queue name accepted, in characters. */
    public static final int MAX_NAME_LENGTH = 512;

    private static final String DEFAULT_TABLE_PREFIX = "";
    private static final String DEFAULT_NOTIFY_CHANNEL = "";
    private static final boolean DEFAULT_NOTIFY_ON_ENQUEUE = true;
    private static final Duration DEFAULT_RETENTION = Duration.ofHours(24);
    private static final int DEFAULT_MAX_ATTEMPTS = 0;
    private static final int DEFAULT_MAX_CLAIM_BATCH = 500;
    private static final int DEFAULT_REAP_BATCH_SIZE = 1000;
    private static final int DEFAULT_WRITE_ATTEMPTS = 3;
    private static final Duration DEFAULT_MIN_WAKE_INTERVAL = Duration.ofMillis(100);
    private static final Duration DEFAULT_WRITE_TIMEOUT = Duration.ofSeconds(10);
    private static final boolean DEFAULT_DELETE_ON_COMPLETE = false;
    private static final int DEFAULT_MAX_WRITE_BATCH = 10_000;
    private static final Duration DEFAULT_HORIZON_WARNING = Duration.ofMinutes(5);
    private static final boolean DEFAULT_STORE_TRACE_CONTEXTS = false;

    /**
     * The most trace contexts an item keeps (see {@link #storeTraceContexts()}): the most recent
     * enqueues'. Bounds the row and the links of a handler's span however often a key is enqueued.
     */
    public static final int MAX_TRACE_CONTEXTS = 8;

    private final String name;
    private final String tablePrefix;
    private final String notifyChannel;
    private final boolean notifyOnEnqueue;
    private final Duration retention;
    private final int maxAttempts;
    private final int maxClaimBatch;
    private final int reapBatchSize;
    private final int writeAttempts;
    private final Duration minWakeInterval;
    private final Duration writeTimeout;
    private final boolean deleteOnComplete;
    private final int maxWriteBatch;
    private final Duration horizonWarning;
    private final boolean storeTraceContexts;

    /** Validates the builder's values and caps every duration; the only way an instance is made. */
    private WorkQueueConfig(Builder b) {
        this.name = validName(b.name);
        this.tablePrefix = validPrefix(b.tablePrefix);
        this.notifyChannel = validChannel(b.notifyChannel);
        this.notifyOnEnqueue = b.notifyOnEnqueue;
        this.retention = Durations.capped(requireAtLeast("retention", b.retention, Duration.ofSeconds(1)));
        if (b.maxAttempts < 0) {
            throw new InvalidConfigException("maxAttempts must be 0 (unlimited) or more but was " + b.maxAttempts);
        }
        this.maxAttempts = b.maxAttempts;
        this.maxClaimBatch = requireAtLeast("maxClaimBatch", b.maxClaimBatch, 1);
        this.reapBatchSize = requireAtLeast("reapBatchSize", b.reapBatchSize, 1);
        this.writeAttempts = requireAtLeast("writeAttempts", b.writeAttempts, 1);
        this.minWakeInterval = Durations.capped(
                requireAtLeast("minWakeInterval", b.minWakeInterval, Duration.ofMillis(1)));
        // Named as the caller named it, so a message about the deprecated alias does not point
        // at a setter the caller never called.
        this.writeTimeout = Durations.capped(
                requireAtLeast("writeTimeout", b.writeTimeout, Duration.ofNanos(1)));
        this.deleteOnComplete = b.deleteOnComplete;
        this.maxWriteBatch = requireAtLeast("maxWriteBatch", b.maxWriteBatch, 1);
        this.horizonWarning = Durations.capped(
                requireAtLeast("horizonWarning", b.horizonWarning, Duration.ofSeconds(1)));
        this.storeTraceContexts = b.storeTraceContexts;
    }

    private static String validName(@Nullable String name) {
        if (name == null || name.isEmpty() || name.length() > MAX_NAME_LENGTH) {
            throw new InvalidConfigException("name must be 1 to " + MAX_NAME_LENGTH + " characters but was "
                    + (name == null ? "null" : name.length() + " characters"));
        }
        // PostgreSQL text cannot hold NUL, and the driver sends an unpaired surrogate as '?', so two
        // different names would silently share one queue's rows.
        for (int i = 0; i < name.length(); i += Character.charCount(name.codePointAt(i))) {
            int c = name.codePointAt(i);
            if (c == 0 || (c >= Character.MIN_SURROGATE && c <= Character.MAX_SURROGATE)) {
                throw new InvalidConfigException(String.format(Locale.ROOT,
                        "name must be text PostgreSQL stores faithfully (no NUL, no unpaired surrogate)"
                                + " but has U+%04X at index %d", c, i));
            }
        }
        return name;
    }

    /**
     * {@code tablePrefix}, unless it cannot make the table's names; the one check of a prefix in
     * this package (the admin's builder uses it too).
     */
    static String validPrefix(@Nullable String tablePrefix) {
        if (tablePrefix == null) {
            throw new InvalidConfigException("tablePrefix must not be null; use \"\" for the default table");
        }
        return checked(TableNames.prefixProblem(tablePrefix), tablePrefix);
    }

    private static String validChannel(@Nullable String notifyChannel) {
        if (notifyChannel == null) {
            throw new InvalidConfigException("notifyChannel must not be null; use \"\" for none");
        }
        return notifyChannel.isEmpty() ? notifyChannel
                : checked(Identifiers.problem("notifyChannel", notifyChannel), notifyChannel);
    }

    /** {@code value}, unless {@code problem} says why it is refused. */
    private static String checked(@Nullable String problem, String value) {
        if (problem != null) {
            throw new InvalidConfigException(problem);
        }
        return value;
    }

    /**
     * Starts a builder for the queue called {@code name}, every other setting at its default. The
     * name is checked by {@link Builder#build()}, like every other setting.
     *
     * @param name the logical queue; see {@link #name()}
     * @return a new builder
     */
    public static Builder builder(String name) {
        return new Builder(name);
    }

    /**
     * Starts a builder holding every setting of this configuration, to derive another from it.
     *
     * @return a new builder; changing it does not change this configuration
     */
    public Builder toBuilder() {
        Builder builder = new Builder(name);
        builder.tablePrefix = tablePrefix;
        builder.notifyChannel = notifyChannel;
        builder.notifyOnEnqueue = notifyOnEnqueue;
        builder.retention = retention;
        builder.maxAttempts = maxAttempts;
        builder.maxClaimBatch = maxClaimBatch;
        builder.reapBatchSize = reapBatchSize;
        builder.writeAttempts = writeAttempts;
        builder.minWakeInterval = minWakeInterval;
        builder.writeTimeout = writeTimeout;
        builder.deleteOnComplete = deleteOnComplete;
        builder.maxWriteBatch = maxWriteBatch;
        builder.horizonWarning = horizonWarning;
        builder.storeTraceContexts = storeTraceContexts;
        return builder;
    }

    /**
     * The logical queue: which rows of the table this configuration's queues read and write.
     *
     * @return 1 to {@value #MAX_NAME_LENGTH} characters of free text, always bound as a parameter
     *         and never rendered into SQL; no NUL and no unpaired surrogate
     */
    public String name() {
        return name;
    }

    /**
     * The prefix of the table's name, the one value rendered into SQL (see
     * {@link WorkQueueMigrations#validatePrefix}).
     *
     * @return {@code ""} for the table {@code work_queue_items}; {@code "ddb"} for
     *         {@code ddb_work_queue_items}
     */
    public String tablePrefix() {
        return tablePrefix;
    }

    /**
     * The channel this queue's wakeups travel on: unless {@link #notifyOnEnqueue()} is off, this
     * instance sends a payload-free notification on it once enqueued rows have committed, so that
     * listeners on it wake up. Never inside the caller's transaction unless the caller asks
     * ({@link ReactiveWorkQueue#enqueueNotifyingInTransaction}), and at most one notifying commit
     * per {@link #minWakeInterval()} per instance (see
     * {@link ReactiveWorkQueue#enqueue(java.util.Collection)} and
     * {@link ReactiveWorkQueue#enqueue(io.r2dbc.spi.Connection, java.util.Collection)}).
     *
     * @return {@code ""} for none (the default); otherwise a plain identifier
     */
    public String notifyChannel() {
        return notifyChannel;
    }

    /**
     * Whether this queue's enqueues send notifications on {@link #notifyChannel()}. Off, the queue
     * is poll-only on the sending side: the channel stays configured for whoever listens on it
     * (the Spring starter starts its listener from it; notifications may come from elsewhere), and
     * enqueues here send nothing, not even one the caller of
     * {@link ReactiveWorkQueue#enqueueNotifyingInTransaction} asks for. Meaningless without a
     * channel.
     *
     * @return {@code true} by default
     */
    public boolean notifyOnEnqueue() {
        return notifyOnEnqueue;
    }

    /**
     * How long completed items are kept before {@link ReactiveWorkQueue#reap()} may delete them.
     *
     * @return at least one second, at most {@link ReactiveWorkQueue#MAX_DURATION}; 24 hours by
     *         default
     */
    public Duration retention() {
        return retention;
    }

    /**
     * How many claims an item is allowed before it stalls: a stalled item is never claimed again
     * and is counted by {@link Stats#stalled()}.
     *
     * @return {@code 0} for unlimited (the default), or a positive count
     */
    public int maxAttempts() {
        return maxAttempts;
    }

    /**
     * The most items one claim leases (a call of {@code claim}, one claim of a {@code claimStream},
     * one round of a {@code process} worker); a larger or non-positive claim limit means this.
     * Concurrent claims of one instance may share a statement, which then leases up to the sum of
     * their limits, within {@link #maxWriteBatch()}.
     *
     * @return at least 1; 500 by default
     */
    public int maxClaimBatch() {
        return maxClaimBatch;
    }

    /**
     * The most rows one {@link ReactiveWorkQueue#reap()} deletes.
     *
     * @return at least 1; 1000 by default
     */
    public int reapBatchSize() {
        return reapBatchSize;
    }

    /**
     * How many runs a write gets when PostgreSQL asks for it to be retried (SQLSTATE 40001,
     * 40P01); nothing else is retried.
     *
     * @return at least 1; 3 by default
     */
    public int writeAttempts() {
        return writeAttempts;
    }

    /**
     * The least time between two wakeups completing {@link ReactiveWorkQueue#awaitWork}: a wakeup
     * inside it is held for the rest of the interval, so a burst of enqueues costs at most one
     * extra claim per interval.
     *
     * @return at least one millisecond, at most {@link ReactiveWorkQueue#MAX_DURATION}; 100 ms by
     *         default
     */
    public Duration minWakeInterval() {
        return minWakeInterval;
    }

    /**
     * How long one group-committed write may take before every caller it carries fails with a
     * {@link WriteTimeoutException}. The group-committed writes are the merged enqueue upsert, the
     * merged complete, and the merged claim (the leasing statement of {@code claim},
     * {@code claimStream}, {@code completeAndClaim} and {@code process}). It bounds one write,
     * not one call: a call queued behind other writes waits for them first, so its worst case is
     * (writes ahead of it + 1) × {@code writeTimeout}, where the writes ahead are about the keys
     * queued before it divided by {@link #maxWriteBatch()}.
     *
     * @return positive, at most {@link ReactiveWorkQueue#MAX_DURATION}; 10 seconds by default
     */
    public Duration writeTimeout() {
        return writeTimeout;
    }

    /**
     * Whether completing an item deletes its row at once instead of marking it completed and
     * keeping it for {@link #retention()}. Opt-in, because it trades history for speed: completing
     * costs one row delete instead of a row update now and the reaper's delete later. When it is
     * {@code true}:
     * <ul>
     * <li>{@code complete} and {@code completeAndClaim} delete the rows they complete; what they
     * count is unchanged: the items this call completed (unknown and already-completed keys are
     * still ignored, so completing twice counts 0 the second time).
     * <li>{@code retention} and {@code reap()} only matter for rows completed before the mode was
     * switched on; {@code reap()} finds nothing else.
     * <li>{@code stats().completed} stays 0 (it counts only such older rows until they are reaped);
     * {@code pending} drops as items complete.
     * <li>Re-enqueueing a key after it completed inserts it afresh: the new priority and delay,
     * attempts 0, no last error, which is what the restart of a kept completed row gives too.
     * <li>Lost: there is no completed history, so nothing to inspect or count after the fact, and
     * no completed row to tell a finished key from one never enqueued.
     * </ul>
     * Instances of one queue may differ in this setting (as during a rolling switch): each
     * completes in its own way and every other rule still holds.
     *
     * @return {@code false} by default
     */
    public boolean deleteOnComplete() {
        return deleteOnComplete;
    }

    /**
     * The most keys one group-committed write carries, counted as the callers named them (entries
     * of an enqueue, keys of a complete) before duplicates merge; for merged claims, the items they
     * ask for (or the keys they complete, if more). What piles up while a write is in
     * flight (during a stall, say) goes in writes of at most this many keys, taken in arrival
     * order, so a backlog drains at the database's pace in writes that each fit in
     * {@link #writeTimeout()}. One call naming more keys than this is never split: it goes alone
     * in its own write. The default keeps one write's throughput near the best measured while the
     * write stays far below the default {@code writeTimeout}; lower it with a much shorter timeout.
     *
     * @return at least 1; 10,000 by default
     */
    public int maxWriteBatch() {
        return maxWriteBatch;
    }

    /**
     * How old the oldest transaction holding back the database's MVCC horizon may get before
     * {@link ReactiveWorkQueue#horizon()} logs a WARN (at most one a minute per queue instance).
     *
     * @return at least one second, at most {@link ReactiveWorkQueue#MAX_DURATION}; 5 minutes by
     *         default
     */
    public Duration horizonWarning() {
        return horizonWarning;
    }

    /**
     * Whether enqueues store their caller's trace context with the key, so that the span of the
     * handler that runs the item links to the request that asked for it. Off by default. Needs an
     * {@code ObservationRegistry} on the queue ({@link WorkQueueBuilder#observationRegistry}) with
     * {@code io.workqueue.observation.WorkQueueTracingObservationHandler} registered: the enqueue's
     * span is the context stored, as a W3C {@code traceparent} (a child of the caller's span, or a
     * trace of its own when the caller has none); without that handler nothing is stored. The
     * handler's span is a new trace that <em>links</em> to each stored context
     * rather than continuing one: the enqueue may be hours earlier, and a key enqueued by several
     * requests answers them all.
     *
     * <p>What an item keeps: the contexts of the enqueues from the one that made it pending (a new
     * key, or a completed key enqueued again, which starts over) until it completes, the most
     * recent {@link #MAX_TRACE_CONTEXTS}. Enqueues merged in one group-committed write each add
     * theirs; an enqueue of a pending key adds its context even when it changes nothing else (so
     * it rewrites the row, where an untraced enqueue would skip it). A retry (after a release or a
     * lapsed lease) and the run again of an item enqueued during its lease link to them all.
     * Completing, releasing and claiming leave them be. Needs schema version 5.
     *
     * <p>Instances of one queue may differ in this setting: those that store add contexts, the
     * others add none and leave the stored ones be; every instance's claims hand out what is stored.
     *
     * @return {@code false} by default
     */
    public boolean storeTraceContexts() {
        return storeTraceContexts;
    }

    /**
     * Whether {@code other} is a configuration with the same value for every setting.
     *
     * @param other any object, or {@code null}
     * @return {@code true} if every setting is equal
     */
    @Override
    public boolean equals(@Nullable Object other) {
        return other instanceof WorkQueueConfig that
                && name.equals(that.name)
                && tablePrefix.equals(that.tablePrefix)
                && notifyChannel.equals(that.notifyChannel)
                && notifyOnEnqueue == that.notifyOnEnqueue
                && retention.equals(that.retention)
                && maxAttempts == that.maxAttempts
                && maxClaimBatch == that.maxClaimBatch
                && reapBatchSize == that.reapBatchSize
                && writeAttempts == that.writeAttempts
                && minWakeInterval.equals(that.minWakeInterval)
                && writeTimeout.equals(that.writeTimeout)
                && deleteOnComplete == that.deleteOnComplete
                && maxWriteBatch == that.maxWriteBatch
                && horizonWarning.equals(that.horizonWarning)
                && storeTraceContexts == that.storeTraceContexts;
    }

    /**
     * A hash over every setting, consistent with {@link #equals}.
     *
     * @return the hash code
     */
    @Override
    public int hashCode() {
        return Objects.hash(name, tablePrefix, notifyChannel, notifyOnEnqueue, retention, maxAttempts, maxClaimBatch, reapBatchSize,
                writeAttempts, minWakeInterval, writeTimeout, deleteOnComplete, maxWriteBatch, horizonWarning,
                storeTraceContexts);
    }

    /**
     * Every setting by name, for logs.
     *
     * @return {@code WorkQueueConfig[name=..., tablePrefix=..., ...]}
     */
    @Override
    public String toString() {
        return "WorkQueueConfig[name=" + name
                + ", tablePrefix=" + tablePrefix
                + ", notifyChannel=" + notifyChannel
                + ", notifyOnEnqueue=" + notifyOnEnqueue
                + ", retention=" + retention
                + ", maxAttempts=" + maxAttempts
                + ", maxClaimBatch=" + maxClaimBatch
                + ", reapBatchSize=" + reapBatchSize
                + ", writeAttempts=" + writeAttempts
                + ", minWakeInterval=" + minWakeInterval
                + ", writeTimeout=" + writeTimeout
                + ", deleteOnComplete=" + deleteOnComplete
                + ", maxWriteBatch=" + maxWriteBatch
                + ", horizonWarning=" + horizonWarning
                + ", storeTraceContexts=" + storeTraceContexts + "]";
    }

    private static int requireAtLeast(String field, int value, int least) {
        if (value < least) {
            throw new InvalidConfigException(field + " must be at least " + least + " but was " + value);
        }
        return value;
    }

    private static Duration requireAtLeast(String field, @Nullable Duration value, Duration least) {
        if (value == null || value.compareTo(least) < 0) {
            throw new InvalidConfigException(field + " must be at least " + least + " but was " + value);
        }
        return value;
    }

    /**
     * Collects the settings of a {@link WorkQueueConfig}, starting from the defaults. Not
     * thread-safe. Setters only record, and the last value given for a setting wins; every value
     * is checked by {@link #build()}, which throws {@link InvalidConfigException} for the first one
     * out of range, naming it and its value. A setter never throws.
     */
    public static final class Builder {
        private final @Nullable String name;
        private @Nullable String tablePrefix = DEFAULT_TABLE_PREFIX;
        private @Nullable String notifyChannel = DEFAULT_NOTIFY_CHANNEL;
        private boolean notifyOnEnqueue = DEFAULT_NOTIFY_ON_ENQUEUE;
        private @Nullable Duration retention = DEFAULT_RETENTION;
        private int maxAttempts = DEFAULT_MAX_ATTEMPTS;
        private int maxClaimBatch = DEFAULT_MAX_CLAIM_BATCH;
        private int reapBatchSize = DEFAULT_REAP_BATCH_SIZE;
        private int writeAttempts = DEFAULT_WRITE_ATTEMPTS;
        private @Nullable Duration minWakeInterval = DEFAULT_MIN_WAKE_INTERVAL;
        private @Nullable Duration writeTimeout = DEFAULT_WRITE_TIMEOUT;
        /** Which setter gave {@link #writeTimeout}, for the message if it is refused. */
        private boolean deleteOnComplete = DEFAULT_DELETE_ON_COMPLETE;
        private int maxWriteBatch = DEFAULT_MAX_WRITE_BATCH;
        private @Nullable Duration horizonWarning = DEFAULT_HORIZON_WARNING;
        private boolean storeTraceContexts = DEFAULT_STORE_TRACE_CONTEXTS;

        private Builder(@Nullable String name) {
            this.name = name;
        }

        /**
         * Sets the table prefix: {@code ""} (the default) uses {@code work_queue_items},
         * {@code "ddb"} uses {@code ddb_work_queue_items}. Lower-case ASCII letters, digits and
         * underscores, not starting with a digit, short enough that every name the schema derives
         * fits PostgreSQL's 63 bytes (see {@link WorkQueueMigrations#validatePrefix}).
         *
         * @param tablePrefix the prefix, or {@code ""}; never {@code null}
         * @return this builder
         */
        public Builder tablePrefix(String tablePrefix) {
            this.tablePrefix = tablePrefix;
            return this;
        }

        /**
         * Sets the channel this queue's wakeups travel on; default {@code ""} (none). A plain
         * lower-case identifier of at most 63 bytes. See {@link WorkQueueConfig#notifyChannel()}.
         *
         * @param notifyChannel the channel, or {@code ""} for none; never {@code null}
         * @return this builder
         */
        public Builder notifyChannel(String notifyChannel) {
            this.notifyChannel = notifyChannel;
            return this;
        }

        /**
         * Sets whether enqueues send notifications on the channel; default {@code true}.
         * {@code false} makes the sending side poll-only while the channel stays configured for
         * listeners. See {@link WorkQueueConfig#notifyOnEnqueue()}.
         *
         * @param notifyOnEnqueue {@code false} to send nothing on enqueue
         * @return this builder
         */
        public Builder notifyOnEnqueue(boolean notifyOnEnqueue) {
            this.notifyOnEnqueue = notifyOnEnqueue;
            return this;
        }

        /**
         * Sets how long completed items are kept before {@code reap()} may delete them; default
         * 24 hours, at least one second. Longer than {@link ReactiveWorkQueue#MAX_DURATION} is
         * kept as {@code MAX_DURATION}: never reaped.
         *
         * @param retention the retention
         * @return this builder
         */
        public Builder retention(Duration retention) {
            this.retention = retention;
            return this;
        }

        /**
         * Sets how many claims an item is allowed before it stalls; default 0 (unlimited), never
         * negative.
         *
         * @param maxAttempts the most claims per item, or 0 for unlimited
         * @return this builder
         */
        public Builder maxAttempts(int maxAttempts) {
            this.maxAttempts = maxAttempts;
            return this;
        }

        /**
         * Sets the most items one claim leases; default 500, at least 1.
         *
         * @param maxClaimBatch the most items per claim
         * @return this builder
         */
        public Builder maxClaimBatch(int maxClaimBatch) {
            this.maxClaimBatch = maxClaimBatch;
            return this;
        }

        /**
         * Sets the most rows one {@code reap()} deletes; default 1000, at least 1.
         *
         * @param reapBatchSize the most rows per reap
         * @return this builder
         */
        public Builder reapBatchSize(int reapBatchSize) {
            this.reapBatchSize = reapBatchSize;
            return this;
        }

        /**
         * Sets how many runs a write gets when PostgreSQL asks for a retry (SQLSTATE 40001,
         * 40P01); default 3, at least 1 (no retry).
         *
         * @param writeAttempts the most runs per write
         * @return this builder
         */
        public Builder writeAttempts(int writeAttempts) {
            this.writeAttempts = writeAttempts;
            return this;
        }

        /**
         * Sets the least time between two wakeups completing {@code awaitWork}; default 100 ms,
         * at least 1 ms. Longer than {@link ReactiveWorkQueue#MAX_DURATION} is taken as
         * {@code MAX_DURATION}.
         *
         * @param minWakeInterval the wake floor
         * @return this builder
         */
        public Builder minWakeInterval(Duration minWakeInterval) {
            this.minWakeInterval = minWakeInterval;
            return this;
        }

        /**
         * Sets the time allowed for one group-committed write (merged enqueue, merged complete,
         * merged claim); default 10 seconds, positive. A call behind other writes can wait
         * (writes ahead of it + 1) times this. Longer than {@link ReactiveWorkQueue#MAX_DURATION}
         * is taken as {@code MAX_DURATION}. See {@link WorkQueueConfig#writeTimeout()}.
         *
         * @param writeTimeout the bound on one write
         * @return this builder
         */
        public Builder writeTimeout(Duration writeTimeout) {
            this.writeTimeout = writeTimeout;
            return this;
        }

        /**
         * Sets whether completing an item deletes its row instead of keeping it until reaped;
         * default {@code false}. See {@link WorkQueueConfig#deleteOnComplete()} for what it buys
         * and what it costs.
         *
         * @param deleteOnComplete {@code true} to delete rows as they complete
         * @return this builder
         */
        public Builder deleteOnComplete(boolean deleteOnComplete) {
            this.deleteOnComplete = deleteOnComplete;
            return this;
        }

        /**
         * Sets the most keys one group-committed write carries; default 10,000, at least 1. See
         * {@link WorkQueueConfig#maxWriteBatch()}.
         *
         * @param maxWriteBatch the most keys per write
         * @return this builder
         */
        public Builder maxWriteBatch(int maxWriteBatch) {
            this.maxWriteBatch = maxWriteBatch;
            return this;
        }

        /**
         * Sets how old the transaction holding back the MVCC horizon may be before
         * {@link ReactiveWorkQueue#horizon()} logs a WARN; default 5 minutes, at least 1 second.
         * Longer than {@link ReactiveWorkQueue#MAX_DURATION} is taken as {@code MAX_DURATION}.
         *
         * @param horizonWarning the age that warrants a warning
         * @return this builder
         */
        public Builder horizonWarning(Duration horizonWarning) {
            this.horizonWarning = horizonWarning;
            return this;
        }

        /**
         * Sets whether enqueues store their caller's trace context with the key, for the handler's
         * span to link to; default {@code false}. See {@link WorkQueueConfig#storeTraceContexts()}.
         *
         * @param storeTraceContexts {@code true} to store them
         * @return this builder
         */
        public Builder storeTraceContexts(boolean storeTraceContexts) {
            this.storeTraceContexts = storeTraceContexts;
            return this;
        }

        /**
         * Checks every setting and returns the configuration. Can be called again, after more
         * setters, for another configuration.
         *
         * @return a valid configuration
         * @throws InvalidConfigException naming the first setting out of range and its value
         */
        public WorkQueueConfig build() {
            return new WorkQueueConfig(this);
        }

        /**
         * Names the builder's queue, for debugging.
         *
         * @return {@code WorkQueueConfig.Builder[<name>]}
         */
        @Override
        public String toString() {
            return "WorkQueueConfig.Builder[" + Objects.toString(name) + "]";
        }
    }
}
