package io.workqueue;

import io.workqueue.internal.Durations;
import io.workqueue.internal.Identifiers;
import io.workqueue.migrations.WorkQueueMigrations;
import java.time.Duration;
import java.util.Locale;
import java.util.Objects;

/**
 * How one logical queue behaves. Immutable; every instance is valid, because the canonical
 * constructor (and so {@link Builder#build()}) refuses bad values with an
 * {@link InvalidConfigException} that names the field and the value. Nothing is silently replaced
 * by a default. Durations have no upper limit to refuse: one longer than
 * {@link ReactiveWorkQueue#MAX_DURATION} means "forever" and is stored, and acted on, as
 * {@code MAX_DURATION}, so the accessors return at most that.
 *
 * @param name            the logical queue; 1 to 512 characters of free text, always bound as a
 *                        parameter, never rendered into SQL
 * @param tablePrefix     {@code ""} uses {@code work_queue_items}; {@code "ddb"} uses
 *                        {@code ddb_work_queue_items}; see {@link WorkQueueMigrations#validatePrefix}
 * @param notifyChannel   {@code ""} for none; otherwise every enqueue sends a payload-free
 *                        notification on this channel, in the transaction that writes the rows
 * @param retention       how long completed items are kept before {@code reap()} may delete them;
 *                        at least one second, at most {@link ReactiveWorkQueue#MAX_DURATION}
 * @param maxAttempts     claims allowed per item before it stalls; {@code 0} means unlimited
 * @param maxClaimBatch   the most items one claim statement leases; at least 1
 * @param reapBatchSize   the most rows one {@code reap()} deletes; at least 1
 * @param writeAttempts   runs of a write that PostgreSQL asks to retry (SQLSTATE 40001, 40P01);
 *                        at least 1
 * @param minWakeInterval the least time between two wakeups completing {@code awaitWork}; at
 *                        least one millisecond, at most {@link ReactiveWorkQueue#MAX_DURATION}
 * @param enqueueTimeout  how long one group-committed write (the merged enqueue upsert, the
 *                        merged complete, or the merged claim) may take before every caller in its
 *                        batch fails with a
 *                        {@link WriteTimeoutException}; positive, at most
 *                        {@link ReactiveWorkQueue#MAX_DURATION}. It bounds one write, not one call:
 *                        a call queued behind other writes waits for them first, so its worst case
 *                        is (writes ahead of it + 1) × {@code enqueueTimeout}, where the writes
 *                        ahead are about the keys queued before it divided by {@code maxWriteBatch}
 * @param deleteOnComplete whether completing an item deletes its row at once instead of marking it
 *                        completed and keeping it for {@code retention}; {@code false} by default.
 *                        Opt-in, because it trades history for speed: completing costs one row
 *                        delete instead of a row update now and the reaper's delete later. When
 *                        it is {@code true}:
 *                        <ul>
 *                        <li>{@code complete} and {@code completeAndClaim} delete the rows they
 *                        complete; what they count is unchanged: the items this call completed
 *                        (unknown and already-completed keys are still ignored, so completing
 *                        twice counts 0 the second time).
 *                        <li>{@code retention} and {@code reap()} only matter for rows completed
 *                        before the mode was switched on; {@code reap()} finds nothing else.
 *                        <li>{@code stats().completed} stays 0 (it counts only such older rows
 *                        until they are reaped); {@code pending} drops as items complete.
 *                        <li>Re-enqueueing a key after it completed inserts it afresh: the new
 *                        priority and delay, attempts 0, no last error, which is what the restart
 *                        of a kept completed row gives too.
 *                        <li>Lost: there is no completed history, so nothing to inspect or count
 *                        after the fact, and no completed row to tell a finished key from one
 *                        never enqueued.
 *                        </ul>
 *                        Instances of one queue may differ in this setting (as during a rolling
 *                        switch): each completes in its own way and every other rule still holds.
 * @param maxWriteBatch   the most keys one group-committed write carries, counted as the callers
 *                        named them (entries of an enqueue, keys of a complete), before duplicates
 *                        merge; at least 1. What piles up while a write is in flight (during a
 *                        stall, say) goes in writes of at most this many keys, taken in arrival
 *                        order, so a backlog drains at the database's pace in writes that each fit
 *                        in {@code enqueueTimeout}. One call naming more keys than this is never
 *                        split: it goes alone in its own write. The default keeps one write's
 *                        throughput near the best measured while the write stays far below the
 *                        default {@code enqueueTimeout}; lower it with a much shorter timeout
 * @param horizonWarning  how old the oldest transaction holding back the database's MVCC horizon
 *                        may get before {@link ReactiveWorkQueue#horizon()} logs a WARN (at most
 *                        one a minute per queue instance); at least 1 second, at most
 *                        {@link ReactiveWorkQueue#MAX_DURATION}; 5 minutes by default
 */
public record WorkQueueConfig(
        String name,
        String tablePrefix,
        String notifyChannel,
        Duration retention,
        int maxAttempts,
        int maxClaimBatch,
        int reapBatchSize,
        int writeAttempts,
        Duration minWakeInterval,
        Duration enqueueTimeout,
        boolean deleteOnComplete,
        int maxWriteBatch,
        Duration horizonWarning) {

    /** The longest queue name accepted, in characters. */
    public static final int MAX_NAME_LENGTH = 512;

    /** The default of {@link #maxWriteBatch()}. */
    private static final int DEFAULT_MAX_WRITE_BATCH = 10_000;
    /** The default of {@link #horizonWarning()}. */
    private static final Duration DEFAULT_HORIZON_WARNING = Duration.ofMinutes(5);

    /**
     * Validates every field and caps every duration at {@link ReactiveWorkQueue#MAX_DURATION};
     * see the record description for the rules.
     */
    public WorkQueueConfig {
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
        WorkQueueMigrations.validatePrefix(tablePrefix);
        if (notifyChannel == null) {
            throw new InvalidConfigException("notifyChannel must not be null; use \"\" for none");
        }
        if (!notifyChannel.isEmpty()) {
            Identifiers.requirePlain("notifyChannel", notifyChannel);
        }
        requireAtLeast("retention", retention, Duration.ofSeconds(1));
        if (maxAttempts < 0) {
            throw new InvalidConfigException("maxAttempts must be 0 (unlimited) or more but was " + maxAttempts);
        }
        requireAtLeast("maxClaimBatch", maxClaimBatch, 1);
        requireAtLeast("reapBatchSize", reapBatchSize, 1);
        requireAtLeast("writeAttempts", writeAttempts, 1);
        requireAtLeast("minWakeInterval", minWakeInterval, Duration.ofMillis(1));
        requireAtLeast("enqueueTimeout", enqueueTimeout, Duration.ofNanos(1));
        requireAtLeast("maxWriteBatch", maxWriteBatch, 1);
        requireAtLeast("horizonWarning", horizonWarning, Duration.ofSeconds(1));
        retention = Durations.capped(retention);
        horizonWarning = Durations.capped(horizonWarning);
        minWakeInterval = Durations.capped(minWakeInterval);
        enqueueTimeout = Durations.capped(enqueueTimeout);
    }

    /**
     * A configuration with {@code maxWriteBatch} at its default and every other field as given;
     * validated like the canonical constructor.
     *
     * @deprecated the record's constructors change whenever a setting is added; this one stays so
     *             that code written against the eleven-field form still compiles. Use
     *             {@link #builder(String)} instead, which is unaffected by new settings.
     */
    @Deprecated
    public WorkQueueConfig(String name, String tablePrefix, String notifyChannel, Duration retention, int maxAttempts,
            int maxClaimBatch, int reapBatchSize, int writeAttempts, Duration minWakeInterval, Duration enqueueTimeout,
            boolean deleteOnComplete) {
        this(name, tablePrefix, notifyChannel, retention, maxAttempts, maxClaimBatch, reapBatchSize, writeAttempts,
                minWakeInterval, enqueueTimeout, deleteOnComplete, DEFAULT_MAX_WRITE_BATCH);
    }

    /**
     * A configuration with {@code horizonWarning} at its default and every other field as given;
     * validated like the canonical constructor.
     *
     * @deprecated kept so that code written against the twelve-field form still compiles; use
     *             {@link #builder(String)}, which is unaffected by new settings.
     */
    @Deprecated
    public WorkQueueConfig(String name, String tablePrefix, String notifyChannel, Duration retention, int maxAttempts,
            int maxClaimBatch, int reapBatchSize, int writeAttempts, Duration minWakeInterval, Duration enqueueTimeout,
            boolean deleteOnComplete, int maxWriteBatch) {
        this(name, tablePrefix, notifyChannel, retention, maxAttempts, maxClaimBatch, reapBatchSize, writeAttempts,
                minWakeInterval, enqueueTimeout, deleteOnComplete, maxWriteBatch, DEFAULT_HORIZON_WARNING);
    }

    /** A builder for the queue called {@code name}, starting from the defaults. */
    public static Builder builder(String name) {
        return new Builder(name);
    }

    /** A builder starting from this configuration. */
    public Builder toBuilder() {
        return new Builder(name)
                .tablePrefix(tablePrefix)
                .notifyChannel(notifyChannel)
                .retention(retention)
                .maxAttempts(maxAttempts)
                .maxClaimBatch(maxClaimBatch)
                .reapBatchSize(reapBatchSize)
                .writeAttempts(writeAttempts)
                .minWakeInterval(minWakeInterval)
                .enqueueTimeout(enqueueTimeout)
                .deleteOnComplete(deleteOnComplete)
                .maxWriteBatch(maxWriteBatch)
                .horizonWarning(horizonWarning);
    }

    private static void requireAtLeast(String field, int value, int least) {
        if (value < least) {
            throw new InvalidConfigException(field + " must be at least " + least + " but was " + value);
        }
    }

    private static void requireAtLeast(String field, Duration value, Duration least) {
        if (value == null || value.compareTo(least) < 0) {
            throw new InvalidConfigException(field + " must be at least " + least + " but was " + value);
        }
    }

    /**
     * Collects a {@link WorkQueueConfig}. Not thread-safe. Values are checked by {@link #build()},
     * not by the setters.
     */
    public static final class Builder {
        private final String name;
        private String tablePrefix = "";
        private String notifyChannel = "";
        private Duration retention = Duration.ofHours(24);
        private int maxAttempts = 0;
        private int maxClaimBatch = 500;
        private int reapBatchSize = 1000;
        private int writeAttempts = 3;
        private Duration minWakeInterval = Duration.ofMillis(100);
        private Duration enqueueTimeout = Duration.ofSeconds(10);
        private boolean deleteOnComplete = false;
        private int maxWriteBatch = DEFAULT_MAX_WRITE_BATCH;
        private Duration horizonWarning = DEFAULT_HORIZON_WARNING;

        private Builder(String name) {
            this.name = name;
        }

        /** Table prefix; default {@code ""}. */
        public Builder tablePrefix(String tablePrefix) {
            this.tablePrefix = tablePrefix;
            return this;
        }

        /** Channel notified on every enqueue; default {@code ""} (none). */
        public Builder notifyChannel(String notifyChannel) {
            this.notifyChannel = notifyChannel;
            return this;
        }

        /**
         * How long completed items are kept; default 24 hours. Longer than
         * {@link ReactiveWorkQueue#MAX_DURATION} is kept as {@code MAX_DURATION}: never reaped.
         */
        public Builder retention(Duration retention) {
            this.retention = retention;
            return this;
        }

        /** Claims allowed per item; default 0 (unlimited). */
        public Builder maxAttempts(int maxAttempts) {
            this.maxAttempts = maxAttempts;
            return this;
        }

        /** Most items per claim statement; default 500. */
        public Builder maxClaimBatch(int maxClaimBatch) {
            this.maxClaimBatch = maxClaimBatch;
            return this;
        }

        /** Most rows one reap deletes; default 1000. */
        public Builder reapBatchSize(int reapBatchSize) {
            this.reapBatchSize = reapBatchSize;
            return this;
        }

        /** Runs of a write PostgreSQL asks to retry; default 3. */
        public Builder writeAttempts(int writeAttempts) {
            this.writeAttempts = writeAttempts;
            return this;
        }

        /**
         * Least time between two wakeups; default 100 ms. Longer than
         * {@link ReactiveWorkQueue#MAX_DURATION} is taken as {@code MAX_DURATION}.
         */
        public Builder minWakeInterval(Duration minWakeInterval) {
            this.minWakeInterval = minWakeInterval;
            return this;
        }

        /**
         * Time allowed for one group-committed write; default 10 seconds. A call behind other
         * writes can wait (writes ahead of it + 1) times this. Longer than
         * {@link ReactiveWorkQueue#MAX_DURATION} is taken as {@code MAX_DURATION}.
         */
        public Builder enqueueTimeout(Duration enqueueTimeout) {
            this.enqueueTimeout = enqueueTimeout;
            return this;
        }

        /**
         * Whether completing an item deletes its row instead of keeping it until reaped; default
         * {@code false}. See {@link WorkQueueConfig} for what it buys and what it costs.
         */
        public Builder deleteOnComplete(boolean deleteOnComplete) {
            this.deleteOnComplete = deleteOnComplete;
            return this;
        }

        /** Most keys one group-committed write carries; default 10,000. */
        public Builder maxWriteBatch(int maxWriteBatch) {
            this.maxWriteBatch = maxWriteBatch;
            return this;
        }

        /**
         * How old the transaction holding back the MVCC horizon may be before
         * {@link ReactiveWorkQueue#horizon()} logs a WARN; default 5 minutes, at least 1 second.
         */
        public Builder horizonWarning(Duration horizonWarning) {
            this.horizonWarning = horizonWarning;
            return this;
        }

        /**
         * The configuration.
         *
         * @throws InvalidConfigException naming the first field that is out of range
         */
        public WorkQueueConfig build() {
            return new WorkQueueConfig(name, tablePrefix, notifyChannel, retention, maxAttempts,
                    maxClaimBatch, reapBatchSize, writeAttempts, minWakeInterval, enqueueTimeout, deleteOnComplete,
                    maxWriteBatch, horizonWarning);
        }

        @Override
        public String toString() {
            return "WorkQueueConfig.Builder[" + Objects.toString(name) + "]";
        }
    }
}
