package io.workqueue;

import java.time.Duration;
import java.util.Objects;

/**
 * What is holding back the database's MVCC horizon: the oldest transaction whose snapshot keeps
 * VACUUM from removing dead row versions. While something holds it — a session left
 * {@code idle in transaction}, a long report, a {@code pg_dump}, a prepared transaction, a
 * replication slot or a standby with {@code hot_standby_feedback} — every completed, released or
 * re-leased item leaves a row version behind that claims must step over, so a queue slows down the
 * longer it lasts. {@link ReactiveWorkQueue#horizon()} reads it, and logs a WARN once it is older
 * than {@link WorkQueueConfig#horizonWarning()}.
 *
 * <p>Immutable and thread-safe. A final class rather than a record, so that it can gain fields.
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
     */
    public static Horizon of(Duration oldestTransactionAge, int holderPid, long replicationSlotXminAge) {
        return new Horizon(oldestTransactionAge, holderPid, replicationSlotXminAge);
    }

    /**
     * How long the oldest transaction that holds a snapshot or a transaction id in this database
     * (or a prepared transaction of it) has been open, on the database clock; {@link Duration#ZERO}
     * when there is none. Sessions of other roles are seen only with {@code pg_read_all_stats}.
     */
    public Duration oldestTransactionAge() {
        return oldestTransactionAge;
    }

    /**
     * The backend process id of that transaction's session, for {@code pg_stat_activity} and
     * {@code pg_terminate_backend}; {@code 0} when there is none or it is a prepared transaction.
     */
    public int holderPid() {
        return holderPid;
    }

    /**
     * The age in transactions of the oldest {@code xmin} or {@code catalog_xmin} a replication slot
     * holds (a standby's {@code hot_standby_feedback} arrives through its slot); {@code 0} when no
     * slot holds one. Slots carry no start time, so this is an age in transactions, not a duration.
     */
    public long replicationSlotXminAge() {
        return replicationSlotXminAge;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof Horizon that
                && oldestTransactionAge.equals(that.oldestTransactionAge)
                && holderPid == that.holderPid
                && replicationSlotXminAge == that.replicationSlotXminAge;
    }

    @Override
    public int hashCode() {
        return Objects.hash(oldestTransactionAge, holderPid, replicationSlotXminAge);
    }

    @Override
    public String toString() {
        return "Horizon[oldestTransactionAge=" + oldestTransactionAge + ", holderPid=" + holderPid
                + ", replicationSlotXminAge=" + replicationSlotXminAge + "]";
    }
}
