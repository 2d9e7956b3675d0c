package io.workqueue.internal.base;

import java.time.Duration;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * The one rule for durations: every duration the library accepts saturates at {@link #MAX} (100
 * years, "forever"), so nothing wraps when added to a timestamp or turned into a timer, and nothing
 * is refused for being long; and how a duration crosses into SQL, as whole microseconds. Stateless.
 */
public final class Durations {
    /** The cap every duration meets: the value of {@code ReactiveWorkQueue.MAX_DURATION}. */
    public static final Duration MAX = Duration.ofDays(36_525);
    /** {@link #MAX} in whole microseconds: the most any statement binds. */
    public static final long MAX_MICROS = MAX.getSeconds() * 1_000_000L;

    /**
     * The shortest lease: PostgreSQL keeps timestamps to the microsecond, so a shorter lease would
     * end as it began, and the item would be claimable again at once.
     */
    public static final Duration MIN_LEASE = Duration.ofNanos(1_000);

    private Durations() {}

    /**
     * What is wrong with {@code lease} as a lease, or {@code null} if nothing is: it must be at least
     * {@link #MIN_LEASE}. Every lease the library takes passes this one check.
     */
    public static @Nullable String leaseProblem(@Nullable Duration lease) {
        String notPositive = positiveProblem("lease", lease);
        if (notPositive != null || lease == null) {
            return notPositive;
        }
        if (lease.compareTo(MIN_LEASE) < 0) {
            return "lease must be at least 1 microsecond, the database clock's resolution, but was " + lease;
        }
        return null;
    }

    /**
     * {@code lease}, if it is one: the check of {@link #leaseProblem} as an exception, for argument
     * checks at subscription.
     *
     * @throws IllegalArgumentException naming the problem, {@code null} included
     */
    public static Duration requireLease(@Nullable Duration lease) {
        String problem = leaseProblem(lease);
        if (lease == null || problem != null) { // leaseProblem names null a problem too
            throw new IllegalArgumentException(problem);
        }
        return lease;
    }

    /**
     * What is wrong with {@code value} as a positive duration named {@code name}, or {@code null} if
     * nothing is: the one wording of the check every positive setting and argument passes.
     */
    public static @Nullable String positiveProblem(String name, @Nullable Duration value) {
        return value == null || value.isZero() || value.isNegative() ? name + " must be positive but was " + value : null;
    }

    /**
     * {@code value}, if it is positive; else {@code error} of {@link #positiveProblem}'s message is
     * thrown: an {@link IllegalArgumentException} for an argument checked at subscription, an
     * {@code InvalidConfigException} for a setting.
     */
    public static Duration requirePositive(String name, @Nullable Duration value,
            Function<String, ? extends RuntimeException> error) {
        if (value == null || value.isZero() || value.isNegative()) {
            throw error.apply(name + " must be positive but was " + value);
        }
        return value;
    }

    /** {@link #requirePositive(String, Duration, Function)} throwing {@link IllegalArgumentException}. */
    public static Duration requirePositive(String name, @Nullable Duration value) {
        return requirePositive(name, value, IllegalArgumentException::new);
    }

    /**
     * {@code value}, if it is zero or more.
     *
     * @throws NullPointerException     if it is {@code null}
     * @throws IllegalArgumentException if it is negative
     */
    public static Duration requireNotNegative(String name, @Nullable Duration value) {
        if (value == null) {
            throw new NullPointerException(name);
        }
        if (value.isNegative()) {
            throw new IllegalArgumentException(name + " must not be negative: " + value);
        }
        return value;
    }

    /** {@code duration}, or {@link #MAX} if it is longer. */
    public static Duration capped(Duration duration) {
        return duration.compareTo(MAX) > 0 ? MAX : duration;
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

    /**
     * The one exponential back-off rule: {@code first} doubled for each attempt after the first
     * ({@code attempt} is 1-based; zero or less counts as 1), never more than {@code max}. Compares
     * before it multiplies, so a long delay cannot overflow.
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
