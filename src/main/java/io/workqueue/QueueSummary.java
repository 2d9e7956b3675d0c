package io.workqueue;

import java.util.Objects;

/**
 * One logical queue of a table as {@link WorkQueueAdmin#queues()} lists it: its name, its
 * {@link Stats} and the attempt limit they were computed with.
 *
 * <p>Immutable and thread-safe.
 */
public final class QueueSummary {
    private final String name;
    private final Stats stats;
    private final int maxAttempts;
    private final boolean registered;

    private QueueSummary(String name, Stats stats, int maxAttempts, boolean registered) {
        this.name = Objects.requireNonNull(name, "name");
        this.stats = Objects.requireNonNull(stats, "stats");
        this.maxAttempts = maxAttempts;
        this.registered = registered;
    }

    /** A summary; see the accessors. */
    public static QueueSummary of(String name, Stats stats, int maxAttempts, boolean registered) {
        return new QueueSummary(name, stats, maxAttempts, registered);
    }

    /** The logical queue name, as stored. */
    public String name() {
        return name;
    }

    /** The queue's stats, the same read as {@link ReactiveWorkQueue#stats()}. */
    public Stats stats() {
        return stats;
    }

    /**
     * The attempt limit that decides which items are stalled (and so not ready): the queue's
     * {@link WorkQueueConfig#maxAttempts()} when the admin was told about the queue, else 0
     * (unlimited: nothing counts as stalled).
     */
    public int maxAttempts() {
        return maxAttempts;
    }

    /**
     * Whether the admin was told about this queue (its attempt limit and, perhaps, its codec), as
     * opposed to finding it in the table only.
     */
    public boolean registered() {
        return registered;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof QueueSummary that && name.equals(that.name) && stats.equals(that.stats)
                && maxAttempts == that.maxAttempts && registered == that.registered;
    }

    @Override
    public int hashCode() {
        return Objects.hash(name, stats, maxAttempts, registered);
    }

    @Override
    public String toString() {
        return "QueueSummary[name=" + name + ", stats=" + stats + ", maxAttempts=" + maxAttempts
                + ", registered=" + registered + "]";
    }
}
