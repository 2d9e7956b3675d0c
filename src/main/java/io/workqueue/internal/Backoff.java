package io.workqueue.internal;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The one exponential back-off: a delay that doubles with each attempt up to a cap, as items are
 * released ({@code WorkerOptions.exponentialBackoff}) and, jittered, as loops that outlive a
 * database outage retry. Stateless.
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
        long ceiling = doubled(attempt, min, max).toMillis();
        long jittered = ceiling / 2 + ThreadLocalRandom.current().nextLong(ceiling / 2 + 1);
        return Duration.ofMillis(Math.max(minMillis, jittered));
    }

    /**
     * {@code first} doubled for each attempt after the first ({@code attempt} is 1-based; zero or
     * less counts as 1), never more than {@code max}. Compares before it multiplies, so a long
     * delay cannot overflow.
     */
    public static Duration doubled(int attempt, Duration first, Duration max) {
        int doublings = Math.max(0, attempt - 1);
        Duration delay = first;
        for (int i = 0; i < doublings && delay.compareTo(max) < 0; i++) {
            delay = delay.multipliedBy(2);
        }
        return delay.compareTo(max) > 0 ? max : delay;
    }
}
