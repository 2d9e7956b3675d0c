package io.workqueue;

import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * What one round of {@link ReactiveWorkQueue#housekeep(Duration)} did: whether this instance kept
 * the queue's house (reaped, read the stats and the horizon, and published the reading for the
 * fleet), or found another instance keeping it and reports that instance's last reading.
 *
 * <p>Immutable and thread-safe. <b>Growth.</b> An output of the queue, free to gain properties: a
 * final class, not a record, so that a later release can add an accessor without breaking code
 * compiled against this one. The queue makes instances; {@link #of} exists for tests, fakes and
 * mocks. Equality is by value.
 */
public final class Housekeeping {
    private final boolean kept;
    private final String keeper;
    private final long reaped;
    private final @Nullable Stats stats;
    private final @Nullable Horizon horizon;
    private final Duration readingAge;
    private final Duration keeperLeaseLeft;

    private Housekeeping(boolean kept, String keeper, long reaped, @Nullable Stats stats, @Nullable Horizon horizon,
            Duration readingAge, Duration keeperLeaseLeft) {
        this.kept = kept;
        this.keeper = Objects.requireNonNull(keeper, "keeper");
        this.reaped = reaped;
        this.stats = stats;
        this.horizon = horizon;
        this.readingAge = Objects.requireNonNull(readingAge, "readingAge");
        this.keeperLeaseLeft = Objects.requireNonNull(keeperLeaseLeft, "keeperLeaseLeft");
    }

    /**
     * A round's outcome.
     *
     * @param kept       see {@link #kept()}
     * @param keeper     see {@link #keeper()}
     * @param reaped     see {@link #reaped()}
     * @param stats      see {@link #stats()}
     * @param horizon    see {@link #horizon()}
     * @param readingAge see {@link #readingAge()}
     * @param keeperLeaseLeft see {@link #keeperLeaseLeft()}
     * @return the outcome
     * @throws NullPointerException if {@code keeper}, {@code readingAge} or {@code keeperLeaseLeft}
     *                              is {@code null}
     */
    public static Housekeeping of(boolean kept, String keeper, long reaped, @Nullable Stats stats,
            @Nullable Horizon horizon, Duration readingAge, Duration keeperLeaseLeft) {
        return new Housekeeping(kept, keeper, reaped, stats, horizon, readingAge, keeperLeaseLeft);
    }

    /**
     * Whether this instance kept the house this round: it reaped, read, and published.
     *
     * @return {@code false} when another instance holds the role
     */
    public boolean kept() {
        return kept;
    }

    /**
     * The name of the instance that keeps the queue's house (this one's when {@link #kept()}): its
     * host name (the {@code HOSTNAME} variable, a pod's name in Kubernetes), process id and a
     * random suffix.
     *
     * @return the keeper's name, for logs and operators
     */
    public String keeper() {
        return keeper;
    }

    /**
     * How many completed items this round reaped.
     *
     * @return zero or more; 0 when another instance kept the house
     */
    public long reaped() {
        return reaped;
    }

    /**
     * The queue's stats: read this round when {@link #kept()}, else the keeper's last published
     * reading.
     *
     * @return the stats, or {@code null} when another instance keeps the house and has not yet
     *         published a reading
     */
    public @Nullable Stats stats() {
        return stats;
    }

    /**
     * The database's MVCC horizon, read like {@link #stats()}.
     *
     * @return the horizon, or {@code null} when no reading has been published yet
     */
    public @Nullable Horizon horizon() {
        return horizon;
    }

    /**
     * How old {@link #stats()} and {@link #horizon()} are, on the database clock.
     *
     * @return {@link Duration#ZERO} when this instance read them this round; else the age of the
     *         keeper's reading (about one interval at most while the keeper is alive)
     */
    public Duration readingAge() {
        return readingAge;
    }

    /**
     * How long the keeper holds the role without renewing it, on the database clock: when another
     * instance keeps the house, the time after which this one may take it over (what
     * {@link ReactiveWorkQueue#housekeeping(Duration)} waits for, at most, before trying again).
     *
     * @return the lease asked for when {@link #kept()}; else what is left of the keeper's
     */
    public Duration keeperLeaseLeft() {
        return keeperLeaseLeft;
    }

    /**
     * Whether {@code other} is an outcome with the same properties.
     *
     * @param other any object, or {@code null}
     * @return {@code true} if every property is equal
     */
    @Override
    public boolean equals(@Nullable Object other) {
        return other instanceof Housekeeping that
                && kept == that.kept
                && reaped == that.reaped
                && keeper.equals(that.keeper)
                && Objects.equals(stats, that.stats)
                && Objects.equals(horizon, that.horizon)
                && readingAge.equals(that.readingAge)
                && keeperLeaseLeft.equals(that.keeperLeaseLeft);
    }

    /**
     * A hash over every property, consistent with {@link #equals}.
     *
     * @return the hash code
     */
    @Override
    public int hashCode() {
        return Objects.hash(kept, keeper, reaped, stats, horizon, readingAge, keeperLeaseLeft);
    }

    /**
     * The outcome's properties by name, for logs.
     *
     * @return {@code Housekeeping[kept=..., keeper=..., ...]}
     */
    @Override
    public String toString() {
        return "Housekeeping[kept=" + kept + ", keeper=" + keeper + ", reaped=" + reaped + ", stats=" + stats
                + ", horizon=" + horizon + ", readingAge=" + readingAge + ", keeperLeaseLeft=" + keeperLeaseLeft + "]";
    }
}
