package io.workqueue.internal.base;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import io.workqueue.ReactiveWorkQueue;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The one bound on durations: "forever" is 100 years, and microseconds never overflow. */
class DurationsTest {
    private static final Duration MAX = ReactiveWorkQueue.MAX_DURATION;
    private static final long MAX_MICROS = MAX.getSeconds() * 1_000_000L;

    @Test
    void aDurationUpToTheCapIsKeptAndALongerOneIsTheCap() {
        assertEquals(Duration.ZERO, Durations.capped(Duration.ZERO));
        assertEquals(Duration.ofSeconds(-5), Durations.capped(Duration.ofSeconds(-5)));
        assertEquals(MAX, Durations.capped(MAX));
        assertEquals(MAX.minusNanos(1), Durations.capped(MAX.minusNanos(1)));
        assertSame(MAX, Durations.capped(MAX.plusNanos(1)));
        assertSame(MAX, Durations.capped(Duration.ofMillis(Long.MAX_VALUE)));
        assertSame(MAX, Durations.capped(Duration.ofSeconds(Long.MAX_VALUE, 999_999_999)));
    }

    @Test
    void microsecondsAreWholeAndExactUpToTheCap() {
        assertEquals(0, Durations.micros(Duration.ZERO));
        assertEquals(0, Durations.micros(Duration.ofNanos(999)));
        assertEquals(1, Durations.micros(Duration.ofNanos(1_999)));
        assertEquals(1_500_000, Durations.micros(Duration.ofMillis(1_500)));
        assertEquals(MAX_MICROS, Durations.micros(MAX));
        assertEquals(MAX_MICROS - 1, Durations.micros(MAX.minusNanos(1)));
    }

    @Test
    void microsecondsSaturateAtTheCapInsteadOfWrapping() {
        assertEquals(MAX_MICROS, Durations.micros(Duration.ofMillis(Long.MAX_VALUE)));
        assertEquals(MAX_MICROS, Durations.micros(Duration.ofSeconds(Long.MAX_VALUE, 999_999_999)));
        assertEquals(MAX_MICROS, Durations.micros(Duration.ofDays(106_750_000)));
    }

    @Test
    void negativeDurationsAreZeroMicroseconds() {
        assertEquals(0, Durations.micros(Duration.ofNanos(-1)));
        assertEquals(0, Durations.micros(Duration.ofSeconds(Long.MIN_VALUE)));
    }
}
