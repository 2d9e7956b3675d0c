package io.workqueue;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * A health snapshot of one logical queue, read by {@link ReactiveWorkQueue#stats()} in one
 * statement on the database clock: how many items are in each state, and how long the
 * longest-waiting ready item has waited.
 *
 * <p><b>Cost.</b> Every count but {@link #completed()} is exact and costs what the pending items
 * cost (a read of the rows the partial due index holds), never what the history costs; the
 * completed count stops at {@link #COMPLETED_COUNT_LIMIT} ({@link #completedCapped()} then says
 * so), because an exact one is a scan of every completed row kept for the retention.
 *
 * <p>Immutable and thread-safe. <b>Growth.</b> An output of the queue, free to gain counts: a final
 * class, not a record, so that a later release can add an accessor without breaking code compiled
 * against this one. The queue makes instances; {@link #of} exists for tests, fakes and mocks, and
 * keeps its signature when counts are added (a new factory overload takes them, and {@code of}
 * gives them a documented default). Equality is by value.
 */
public final class Stats {
    /**
     * The most completed items {@link ReactiveWorkQueue#stats()} counts: past it the count stops,
     * {@link #completed()} reports this number and {@link #completedCapped()} is {@code true}.
     * Counting further would cost a read per completed row kept, which with a day's retention is
     * millions.
     */
    public static final long COMPLETED_COUNT_LIMIT = 10_000;

    private final long pending;
    private final long ready;
    private final long leased;
    private final long stalled;
    private final long completed;
    private final boolean completedCapped;
    private final Duration oldestReadyAge;
    private final @Nullable Instant pausedAt;

    private Stats(long pending, long ready, long leased, long stalled, long completed, boolean completedCapped,
            Duration oldestReadyAge, @Nullable Instant pausedAt) {
        this.pending = pending;
        this.ready = ready;
        this.leased = leased;
        this.stalled = stalled;
        this.completed = completed;
        this.completedCapped = completedCapped;
        this.oldestReadyAge = Objects.requireNonNull(oldestReadyAge, "oldestReadyAge");
        this.pausedAt = pausedAt;
    }

    /**
     * A snapshot as {@link ReactiveWorkQueue#stats()} would emit it; for tests and for other
     * implementations of {@link ReactiveWorkQueue}.
     *
     * @param pending        see {@link #pending()}
     * @param ready          see {@link #ready()}
     * @param leased         see {@link #leased()}
     * @param stalled        see {@link #stalled()}
     * @param completed      see {@link #completed()}
     * @param oldestReadyAge see {@link #oldestReadyAge()}
     * @return the snapshot, with {@link #completedCapped()} {@code false}: {@code completed} is taken
     *         as an exact count, whatever its size
     * @throws NullPointerException if {@code oldestReadyAge} is {@code null}
     */
    public static Stats of(long pending, long ready, long leased, long stalled, long completed,
            Duration oldestReadyAge) {
        return new Stats(pending, ready, leased, stalled, completed, false, oldestReadyAge, null);
    }

    /**
     * A snapshot whose completed count may have stopped short, as {@link ReactiveWorkQueue#stats()}
     * emits it.
     *
     * @param pending         see {@link #pending()}
     * @param ready           see {@link #ready()}
     * @param leased          see {@link #leased()}
     * @param stalled         see {@link #stalled()}
     * @param completed       see {@link #completed()}
     * @param completedCapped see {@link #completedCapped()}: {@code true} when there are more than
     *                        {@code completed}
     * @param oldestReadyAge  see {@link #oldestReadyAge()}
     * @return the snapshot
     * @throws NullPointerException if {@code oldestReadyAge} is {@code null}
     */
    public static Stats of(long pending, long ready, long leased, long stalled, long completed,
            boolean completedCapped, Duration oldestReadyAge) {
        return new Stats(pending, ready, leased, stalled, completed, completedCapped, oldestReadyAge, null);
    }

    /**
     * This snapshot of a queue paused since {@code pausedAt}; for the queue, tests and other
     * implementations of {@link ReactiveWorkQueue}.
     *
     * @param pausedAt when the queue was paused, on the database clock
     * @return a snapshot with the same counts, paused
     * @throws NullPointerException if {@code pausedAt} is {@code null}
     */
    public Stats withPausedAt(Instant pausedAt) {
        return new Stats(pending, ready, leased, stalled, completed, completedCapped, oldestReadyAge,
                Objects.requireNonNull(pausedAt, "pausedAt"));
    }

    /**
     * When an operator paused the queue ({@link WorkQueueAdmin#pause}), if it is paused: claims on
     * every instance then lease nothing, so {@link #ready()} items wait and
     * {@link #oldestReadyAge()} grows by design, not because workers are missing. Health checks
     * and alerts should read this first.
     *
     * @return the instant of the pause, on the database clock; empty while the queue runs
     */
    public Optional<Instant> pausedAt() {
        return Optional.ofNullable(pausedAt);
    }

    /**
     * Whether the queue is paused: {@code pausedAt().isPresent()}.
     *
     * @return {@code true} while an operator has the queue paused
     */
    public boolean paused() {
        return pausedAt != null;
    }

    /**
     * Items not completed, whatever their state: the queue's depth.
     *
     * @return zero or more
     */
    public long pending() {
        return pending;
    }

    /**
     * Items a claim would hand out now, by the claim's own predicate: available, not leased (or
     * the lease lapsed), and not out of attempts.
     *
     * @return zero or more, at most {@link #pending()}
     */
    public long ready() {
        return ready;
    }

    /**
     * Pending items with a live lease: work in progress.
     *
     * @return zero or more, at most {@link #pending()}
     */
    public long leased() {
        return leased;
    }

    /**
     * Pending items out of attempts ({@link WorkQueueConfig#maxAttempts()}), which no claim hands
     * out again: poison items that need a human.
     *
     * @return zero or more; always 0 when attempts are unlimited
     */
    public long stalled() {
        return stalled;
    }

    /**
     * Completed items not yet reaped, counted up to {@link #COMPLETED_COUNT_LIMIT}: when
     * {@link #completedCapped()}, there are more than this.
     *
     * @return zero or more; at most {@link #COMPLETED_COUNT_LIMIT} from {@link ReactiveWorkQueue#stats()}
     */
    public long completed() {
        return completed;
    }

    /**
     * Whether the completed count stopped at its limit: there are more than {@link #completed()}
     * completed items (show it as "10,000+", not as a count).
     *
     * @return {@code true} if {@link #completed()} is a lower bound rather than the count
     */
    public boolean completedCapped() {
        return completedCapped;
    }

    /**
     * How long the longest-waiting ready item has been claimable (available, and any lease on it
     * lapsed). The number to alert on, since depth alone cannot tell a deep moving queue from a
     * deep stuck one.
     *
     * @return the age on the database clock; {@link Duration#ZERO} when nothing is ready
     */
    public Duration oldestReadyAge() {
        return oldestReadyAge;
    }

    /**
     * Whether {@code other} is a snapshot with the same counts and age.
     *
     * @param other any object, or {@code null}
     * @return {@code true} if every property is equal
     */
    @Override
    public boolean equals(@Nullable Object other) {
        return other instanceof Stats that
                && pending == that.pending
                && ready == that.ready
                && leased == that.leased
                && stalled == that.stalled
                && completed == that.completed
                && completedCapped == that.completedCapped
                && oldestReadyAge.equals(that.oldestReadyAge)
                && Objects.equals(pausedAt, that.pausedAt);
    }

    /**
     * A hash over every property, consistent with {@link #equals}.
     *
     * @return the hash code
     */
    @Override
    public int hashCode() {
        return Objects.hash(pending, ready, leased, stalled, completed, completedCapped, oldestReadyAge, pausedAt);
    }

    /**
     * The snapshot's properties by name, for logs.
     *
     * @return {@code Stats[pending=..., ready=..., ...]}
     */
    @Override
    public String toString() {
        return "Stats[pending=" + pending + ", ready=" + ready + ", leased=" + leased + ", stalled=" + stalled
                + ", completed=" + completed + (completedCapped ? "+" : "") + ", oldestReadyAge=" + oldestReadyAge
                + (pausedAt == null ? "" : ", pausedAt=" + pausedAt) + "]";
    }
}
