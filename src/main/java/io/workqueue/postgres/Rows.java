package io.workqueue.postgres;

import io.r2dbc.spi.Readable;
import io.workqueue.Stats;
import java.time.Duration;
import org.jspecify.annotations.Nullable;

/** Reading the values the statements return: one home for how a row becomes a value type. */
final class Rows {

    private Rows() {
    }

    /** A row of {@link Sql#stats}: the counts of each state and the age of the oldest ready item. */
    static Stats stats(Readable row) {
        // The statement counts one past the limit, so "more than the limit" is told from "exactly".
        long completed = longValue(row.get("completed", Long.class));
        return Stats.of(
                longValue(row.get("pending", Long.class)),
                longValue(row.get("ready", Long.class)),
                longValue(row.get("leased", Long.class)),
                longValue(row.get("stalled", Long.class)),
                Math.min(completed, Stats.COMPLETED_COUNT_LIMIT),
                completed > Stats.COMPLETED_COUNT_LIMIT,
                ofMicros(longValue(row.get("oldest_ready_us", Long.class))));
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
