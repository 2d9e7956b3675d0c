package io.workqueue.internal;

import io.workqueue.Horizon;
import io.workqueue.Stats;
import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * What a queue reports about itself. The default records nothing; {@link MicrometerQueueMetrics}
 * records to Micrometer, and is the only class that touches Micrometer types, so the library runs
 * without Micrometer on the classpath. Implementations are thread-safe and never throw.
 */
public interface QueueMetrics {
    /** Records nothing. */
    QueueMetrics NONE = new QueueMetrics() {};

    /** A group-committed enqueue write of {@code keys} distinct keys committed. */
    default void flushed(int keys) {}

    /**
     * A group-committed enqueue write ended with {@code outcome}, {@code nanos} after it started
     * (retries included); called for every write, failed and timed-out ones too.
     */
    default void flushEnded(WriteOutcome outcome, long nanos) {}

    /** A transactional enqueue wrote {@code keys} distinct keys. */
    default void enqueued(int keys) {}

    /** A claim leased {@code items}, {@code reclaimed} of them over lapsed leases, in {@code nanos}. */
    default void claimed(int items, int reclaimed, long nanos) {}

    /**
     * A look behind the claim cursors ran for {@code nanos} and found something due behind the
     * cursors of {@code bandsOpened} bands.
     */
    default void looked(long nanos, int bandsOpened) {}

    /** {@code count} items completed. */
    default void completed(long count) {}

    /** {@code count} completions found their item enqueued again during its lease and re-armed it. */
    default void requeuedDuringLease(long count) {}

    /** {@code count} items released. */
    default void released(long count) {}

    /**
     * Whether {@link #claimLags} and {@link #heldUntilCompletion} record anything: when not, the
     * queue skips decoding the per-item arrays a claim returns for them.
     */
    default boolean timesItems() {
        return false;
    }

    /** Leases extended, and those an extension named that were no longer the caller's. */
    default void extended(long count, long refused) {}

    /** Items handed back without counting the attempt. */
    default void snoozed(long count) {}

    /** {@code count} items removed. */
    default void removed(long count) {}

    /** {@code count} items reaped. */
    default void reaped(long count) {}

    /**
     * A notifying commit of this instance's own (the debounced wakeup notification) succeeded,
     * {@code nanos} after its statement was sent.
     */
    default void notified(long nanos) {}

    /** A write is being run again at PostgreSQL's request. */
    default void writeRetried() {}

    /** A fresh health snapshot. */
    default void observed(Stats stats) {}

    /** A fresh reading of what holds the database's MVCC horizon. */
    default void observed(Horizon horizon) {}

    /**
     * A fresh reading of the longest-running live lease of the queue, since its claim.
     *
     * @param longest zero when nothing is leased
     */
    default void longestLease(Duration longest) {}

    /**
     * A claim leased items that had waited {@code waitedMicros} each (null elements are skipped)
     * since they became claimable.
     */
    default void claimLags(@Nullable Long @Nullable [] waitedMicros) {}

    /** Items were completed {@code heldMicros} each (null elements are skipped) after their claims. */
    default void heldUntilCompletion(@Nullable Long @Nullable [] heldMicros) {}
}
