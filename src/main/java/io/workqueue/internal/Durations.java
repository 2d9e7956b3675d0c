package io.workqueue.internal;

import io.workqueue.ReactiveWorkQueue;
import java.time.Duration;

/**
 * The one place durations are bounded before they reach a timer or a statement: anything longer
 * than {@link ReactiveWorkQueue#MAX_DURATION} means "forever" and is taken as that maximum, so no
 * conversion can overflow and no interval can leave PostgreSQL's range.
 */
public final class Durations {
    /** {@link ReactiveWorkQueue#MAX_DURATION} in whole microseconds: the most any statement binds. */
    public static final long MAX_MICROS = ReactiveWorkQueue.MAX_DURATION.getSeconds() * 1_000_000L;

    private Durations() {}

    /** {@code duration}, or {@link ReactiveWorkQueue#MAX_DURATION} if it is longer. */
    public static Duration capped(Duration duration) {
        return duration.compareTo(ReactiveWorkQueue.MAX_DURATION) > 0 ? ReactiveWorkQueue.MAX_DURATION : duration;
    }

    /**
     * Whole microseconds of {@code duration} after {@linkplain #capped capping}; negative
     * durations give 0. Exact for every accepted value: the cap is about 3.2e15 microseconds.
     */
    public static long micros(Duration duration) {
        if (duration.isNegative()) {
            return 0;
        }
        Duration bounded = capped(duration);
        return bounded.getSeconds() * 1_000_000L + bounded.getNano() / 1_000;
    }
}
