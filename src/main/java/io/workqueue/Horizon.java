package io.workqueue;

import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * What is holding back the database's MVCC horizon: the oldest transaction whose snapshot keeps
 * VACUUM from removing dead row versions. While something holds it — a session left
 * {@code idle in transaction}, a long report, a {@code pg_dump}, a prepared transaction, a
 * replication slot or a standby with {@code hot_standby_feedback} — every completed, released or
 * re-leased item leaves a row version behind that claims must step over, so a queue slows down the
 * longer it lasts. {@link ReactiveWorkQueue#horizon()} reads it, and logs a WARN once it is older
 * than {@link WorkQueueConfig#horizonWarning()}.
 *
 * <p>Immutable and thread-safe. <b>Growth.</b> An output of the queue, free to gain properties: a
 * final class, not a record, so that a later release can add an accessor without breaking code
 * compiled against this one. The queue makes instances; {@link #of} exists for tests, fakes and
 * mocks, and keeps its signature when properties are added. Equality is by value.
 */
public final class Horizon {
    private final Duration oldestTransactionAge;
    private final int holderPid;
    private final long replicationSlotXminAge;

    private Horizon(Duration oldestTransactionAge, int holderPid, long replicationSlotXminAge) {
        this.oldestTransactionAge = Objects.requireNonNull(oldestTransactionAge, "oldestTransactionAge");
        this.holderPid = holderPid;
        this.replicationSlotXminAge = replicationSlotXminAge;
    }

    /**
     * A reading.
     *
     * @param oldestTransactionAge   see {@link #oldestTransactionAge()}
     * @param holderPid              see {@link #holderPid()}
     * @param replicationSlotXminAge see {@link #replicationSlotXminAge()}
     * @return the reading
     * @throws NullPointerException if {@code oldestTransactionAge} is {@code null}
     */
    public static Horizon of(Duration oldestTransactionAge, int holderPid, long replicationSlotXminAge) {
        return new Horizon(oldestTransactionAge, holderPid, replicationSlotXminAge);
    }

    /**
     * How long the oldest transaction that holds a snapshot or a transaction id in this database
     * (or a prepared transaction of it) has been open, on the database clock; {@link Duration#ZERO}
     * when there is none. Sessions of other roles are seen only with {@code pg_read_all_stats}. A
     * running plain {@code VACUUM} (autovacuum's too) does not count: it shows a snapshot, but the
     * server does not hold the horizon back for it.
     *
     * @return the age on the database clock; {@link Duration#ZERO} when no transaction holds it
     */
    public Duration oldestTransactionAge() {
        return oldestTransactionAge;
    }

    /**
     * The backend process id of that transaction's session, for {@code pg_stat_activity} and
     * {@code pg_terminate_backend}.
     *
     * @return the pid; {@code 0} when there is none or it is a prepared transaction
     */
    public int holderPid() {
        return holderPid;
    }

    /**
     * The age in transactions of the oldest {@code xmin} or {@code catalog_xmin} a replication slot
     * holds (a standby's {@code hot_standby_feedback} arrives through its slot). Slots carry no
     * start time, so this is an age in transactions, not a duration.
     *
     * @return the age in transactions; {@code 0} when no slot holds one
     */
    public long replicationSlotXminAge() {
        return replicationSlotXminAge;
    }

    /**
     * Whether {@code other} is a reading with the same age, pid and slot age.
     *
     * @param other any object, or {@code null}
     * @return {@code true} if every property is equal
     */
    @Override
    public boolean equals(@Nullable Object other) {
        return other instanceof Horizon that
                && oldestTransactionAge.equals(that.oldestTransactionAge)
                && holderPid == that.holderPid
                && replicationSlotXminAge == that.replicationSlotXminAge;
    }

    /**
     * A hash over every property, consistent with {@link #equals}.
     *
     * @return the hash code
     */
    @Override
    public int hashCode() {
        return Objects.hash(oldestTransactionAge, holderPid, replicationSlotXminAge);
    }

    /**
     * The reading's properties by name, for logs.
     *
     * @return {@code Horizon[oldestTransactionAge=..., holderPid=..., replicationSlotXminAge=...]}
     */
    @Override
    public String toString() {
        return "Horizon[oldestTransactionAge=" + oldestTransactionAge + ", holderPid=" + holderPid
                + ", replicationSlotXminAge=" + replicationSlotXminAge + "]";
    }
}
