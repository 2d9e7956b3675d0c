package io.workqueue.testing;

import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.util.function.BooleanSupplier;
import java.util.function.Predicate;
import java.util.function.Supplier;

/**
 * Waiting on a condition the database decides, with a deadline instead of a fixed sleep: the test
 * moves on the moment the condition holds, and fails with a description when it never does.
 */
public final class Poll {
    private static final Duration INTERVAL = Duration.ofMillis(20);

    private Poll() {}

    /** Probes until {@code done} accepts a value, and returns that value; fails after {@code timeout}. */
    public static <T> T until(Duration timeout, String what, Supplier<T> probe, Predicate<? super T> done) {
        long deadline = System.nanoTime() + timeout.toNanos();
        T last;
        while (true) {
            last = probe.get();
            if (done.test(last)) {
                return last;
            }
            if (System.nanoTime() - deadline > 0) {
                return fail("waited " + timeout + " for " + what + "; last value was " + last);
            }
            pause();
        }
    }

    /** Waits until {@code condition} holds; fails after {@code timeout}. */
    public static void until(Duration timeout, String what, BooleanSupplier condition) {
        until(timeout, what, condition::getAsBoolean, Boolean::booleanValue);
    }

    /** Waits until {@code condition} holds; fails after {@code timeout}, describing {@code state}. */
    public static void until(Duration timeout, String what, BooleanSupplier condition, Supplier<String> state) {
        if (!whether(timeout, condition)) {
            fail("waited " + timeout + " for " + what + "; " + state.get());
        }
    }

    /**
     * Waits up to {@code window} for {@code condition}; whether it came. For a test that must go on
     * either way (a wait that the code under test may or may not let end).
     */
    public static boolean whether(Duration window, BooleanSupplier condition) {
        long end = System.nanoTime() + window.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - end > 0) {
                return false;
            }
            pause();
        }
        return true;
    }

    /**
     * Checks that {@code condition} keeps holding for the whole {@code window}. Only for absences,
     * which no event can announce (nothing more is claimed after a cancel).
     */
    public static void during(Duration window, String what, BooleanSupplier condition) {
        long end = System.nanoTime() + window.toNanos();
        do {
            if (!condition.getAsBoolean()) {
                fail("expected " + what + " to hold for " + window + ", but it stopped holding");
            }
            pause();
        } while (System.nanoTime() - end < 0);
    }

    private static void pause() {
        try {
            Thread.sleep(INTERVAL.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while polling", e);
        }
    }
}
