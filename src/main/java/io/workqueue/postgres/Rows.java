package io.workqueue.postgres;

import io.r2dbc.spi.Readable;
import io.workqueue.Horizon;
import io.workqueue.Stats;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import org.jspecify.annotations.Nullable;

/** Reading the values the statements return: one home for how a row becomes a value type. */
final class Rows {

    private Rows() {
    }

    /**
     * A row of {@link Sql#stats}: the counts of each pending state and the age of the oldest ready
     * item, with the completed count {@link Sql#statsCompleted} read.
     */
    static Stats stats(Readable row, long completedCounted) {
        // statsCompleted counts one past the limit, so "more than the limit" is told from "exactly".
        return stats(row, Math.min(completedCounted, Stats.COMPLETED_COUNT_LIMIT),
                completedCounted > Stats.COMPLETED_COUNT_LIMIT);
    }

    /** The stats' columns of a row, under the names both the stats read and the keeper's reading use. */
    private static Stats stats(Readable row, long completed, boolean completedCapped) {
        Stats stats = Stats.of(
                longValue(row.get("pending", Long.class)),
                longValue(row.get("ready", Long.class)),
                longValue(row.get("leased", Long.class)),
                longValue(row.get("stalled", Long.class)),
                completed,
                completedCapped,
                ofMicros(longValue(row.get("oldest_ready_us", Long.class))));
        Long pausedMicros = row.get("paused_us", Long.class);
        return pausedMicros == null ? stats : stats.withPausedAt(Instant.EPOCH.plus(pausedMicros, ChronoUnit.MICROS));
    }

    /** The "longest_lease_us" column of a stats row or a keeper's reading; null where it is null. */
    static @Nullable Duration longestLease(Readable row) {
        Long micros = row.get("longest_lease_us", Long.class);
        return micros == null ? null : ofMicros(Math.max(micros, 0));
    }

    /**
     * What {@link Sql#keepHouse} returns; stats and horizon are null before the keeper's first
     * reading, the longest lease also when that reading predates schema version 5.
     */
    record KeeperRow(boolean kept, String keeper, Duration keeperLeaseLeft, Duration readingAge,
            @Nullable Stats stats, @Nullable Horizon horizon, @Nullable Duration longestLease) {}

    static KeeperRow keeperRow(Readable row) {
        Long readAgo = row.get("read_ago_us", Long.class);
        // Published as the keeper read it: the count already stopped at the limit, and whether it did.
        Stats stats = readAgo == null ? null : stats(row, longValue(row.get("completed", Long.class)),
                Boolean.TRUE.equals(row.get("completed_capped", Boolean.class)));
        Horizon horizon = readAgo == null ? null : Horizon.of(
                ofMicros(longValue(row.get("horizon_us", Long.class))),
                intValue(row.get("horizon_pid", Integer.class)),
                longValue(row.get("slot_xmin_age", Long.class)));
        Duration left = ofMicros(longValue(row.get("keeper_left_us", Long.class)));
        return new KeeperRow(Boolean.TRUE.equals(row.get("kept", Boolean.class)),
                String.valueOf(row.get("keeper", String.class)),
                left.isNegative() ? Duration.ZERO : left,
                readAgo == null ? Duration.ZERO : ofMicros(Math.max(readAgo, 0)),
                stats, horizon, readAgo == null ? null : longestLease(row));
    }

    /**
     * A span the database computed in microseconds. Split into seconds and a remainder rather
     * than multiplied into nanoseconds, so no value a bigint holds overflows.
     */
    static Duration ofMicros(long micros) {
        return Duration.ofSeconds(Math.floorDiv(micros, 1_000_000L), Math.floorMod(micros, 1_000_000L) * 1000L);
    }

    /** A nullable aggregate (a count or age over no rows) read as zero. */
    static long longValue(@Nullable Long value) {
        return value == null ? 0L : value;
    }

    /** A nullable int read as zero. */
    static int intValue(@Nullable Integer value) {
        return value == null ? 0 : value;
    }
}
