package io.workqueue;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class EntryTest {

    @Test
    void aNegativeOrMissingDelayIsZero() {
        assertEquals(Duration.ZERO, Entry.of("k").withDelay(Duration.ofSeconds(-1)).delay());
        assertEquals(Duration.ZERO, new Entry<>("k", 0, null).delay());
    }

    @Test
    void aDelayLongerThanTheCapIsTheCap() {
        assertEquals(ReactiveWorkQueue.MAX_DURATION, Entry.of("k").withDelay(Duration.ofMillis(Long.MAX_VALUE)).delay());
        assertEquals(ReactiveWorkQueue.MAX_DURATION,
                new Entry<>("k", 0, Duration.ofSeconds(Long.MAX_VALUE, 999_999_999)).delay());
        assertEquals(ReactiveWorkQueue.MAX_DURATION, Entry.of("k").withDelay(ReactiveWorkQueue.MAX_DURATION).delay());
        assertEquals(Duration.ofDays(3), Entry.of("k").withDelay(Duration.ofDays(3)).delay());
    }
}
