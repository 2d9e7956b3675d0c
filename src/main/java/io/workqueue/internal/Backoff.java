package io.workqueue.internal;

import io.workqueue.internal.base.Durations;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Jittered exponential back-off for loops that outlive a database outage: the one doubling rule
 * ({@link Durations#doubled}, which items' back-off uses too), drawn from its upper half. Stateless.
 */
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
        long ceiling = Durations.doubled(attempt, min, max).toMillis();
        long jittered = ceiling / 2 + ThreadLocalRandom.current().nextLong(ceiling / 2 + 1);
        return Duration.ofMillis(Math.max(minMillis, jittered));
    }
}
