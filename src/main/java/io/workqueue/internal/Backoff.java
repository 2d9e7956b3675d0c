package io.workqueue.internal;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/** Jittered exponential back-off for loops that outlive a database outage. */
public final class Backoff {
    /** The first delay of a claim loop after a transient failure. */
    public static final Duration MIN = Duration.ofMillis(100);
    /** The longest delay of a claim loop between retries. */
    public static final Duration MAX = Duration.ofSeconds(5);

    private Backoff() {}

    /**
     * The delay before retry number {@code attempt} (1-based): {@code min} doubled per attempt,
     * capped at {@code max}, then drawn from the upper half of that so a fleet that failed together
     * does not retry in lockstep. Never below {@code min}.
     */
    static Duration jittered(int attempt, Duration min, Duration max) {
        long minMillis = min.toMillis();
        long ceiling = Math.min(max.toMillis(), minMillis << Math.min(Math.max(attempt - 1, 0), 20));
        long jittered = ceiling / 2 + ThreadLocalRandom.current().nextLong(ceiling / 2 + 1);
        return Duration.ofMillis(Math.max(minMillis, jittered));
    }
}
