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

    /**
     * A summary; see the accessors. The admin makes summaries; this factory exists for tests, fakes
     * and other implementations of {@link WorkQueueAdmin}.
     *
     * @param name        see {@link #name()}
     * @param stats       see {@link #stats()}
     * @param maxAttempts see {@link #maxAttempts()}
     * @param registered  see {@link #registered()}
     * @return the summary
     * @throws NullPointerException if {@code name} or {@code stats} is {@code null}
     */
    public static QueueSummary of(String name, Stats stats, int maxAttempts, boolean registered) {
        return new QueueSummary(name, stats, maxAttempts, registered);
    }

    /**
     * The logical queue name, as stored.
     *
     * @return the name, as {@link WorkQueueConfig#name()} gives it and the admin's methods take it
     */
    public String name() {
        return name;
    }

    /**
     * The queue's stats, the same read as {@link ReactiveWorkQueue#stats()}.
     *
     * @return the snapshot {@link WorkQueueAdmin#stats(String)} read for this queue, its stalled
     *         and ready counts computed with {@link #maxAttempts()}
     */
    public Stats stats() {
        return stats;
    }

    /**
     * The attempt limit that decides which items are stalled (and so not ready): the queue's
     * {@link WorkQueueConfig#maxAttempts()} when the admin was told about the queue, else 0
     * (unlimited: nothing counts as stalled).
     *
     * @return the attempt limit, or 0 for unlimited
     */
    public int maxAttempts() {
        return maxAttempts;
    }

    /**
     * Whether the admin was told about this queue (its attempt limit and, perhaps, its codec), as
     * opposed to finding it in the table only.
     *
     * @return {@code true} if the queue was registered with a {@link WorkQueueAdmin.Builder}
     *         {@code queue(...)} method, {@code false} if it was only found in the table
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
