package io.workqueue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class EntryTest {

    @Test
    void aNegativeDelayIsZero() {
        assertEquals(Duration.ZERO, Entry.of("k").withDelay(Duration.ofSeconds(-1)).delay());
        assertEquals(Duration.ZERO, Entry.of("k").withDelay(Duration.ofSeconds(Long.MIN_VALUE)).delay());
    }

    @Test
    void aNullDelayIsABadArgument() {
        assertThrows(NullPointerException.class, () -> Entry.of("k").withDelay(null));
    }

    @Test
    void aDelayLongerThanTheCapIsTheCap() {
        assertEquals(ReactiveWorkQueue.MAX_DURATION, Entry.of("k").withDelay(Duration.ofMillis(Long.MAX_VALUE)).delay());
        assertEquals(ReactiveWorkQueue.MAX_DURATION,
                Entry.of("k").withDelay(Duration.ofSeconds(Long.MAX_VALUE, 999_999_999)).delay());
        assertEquals(ReactiveWorkQueue.MAX_DURATION, Entry.of("k").withDelay(ReactiveWorkQueue.MAX_DURATION).delay());
        assertEquals(Duration.ofDays(3), Entry.of("k").withDelay(Duration.ofDays(3)).delay());
    }

    @Test
    void ofStartsAtPriorityZeroWithNoDelayAndWithersChangeOnePropertyEach() {
        Entry<String> entry = Entry.of("k");
        assertEquals("k", entry.key());
        assertEquals(0, entry.priority());
        assertEquals(Duration.ZERO, entry.delay());
        Entry<String> both = entry.withPriority(5).withDelay(Duration.ofSeconds(10));
        assertEquals(5, both.priority());
        assertEquals(Duration.ofSeconds(10), both.delay());
        assertEquals(Duration.ofSeconds(10), both.withPriority(1).delay(), "withPriority keeps the delay");
        assertEquals(5, both.withDelay(Duration.ZERO).priority(), "withDelay keeps the priority");
        assertEquals(0, entry.priority(), "the original is unchanged");
    }

    @Test
    void aNullKeyIsCarriedForTheEnqueueToRefuse() {
        assertNull(Entry.of(null).key());
    }

    @Test
    void equalityIsByValue() {
        Entry<String> entry = Entry.of("k").withPriority(2).withDelay(Duration.ofSeconds(1));
        assertEquals(entry, Entry.of("k").withDelay(Duration.ofSeconds(1)).withPriority(2));
        assertEquals(entry.hashCode(), Entry.of("k").withDelay(Duration.ofSeconds(1)).withPriority(2).hashCode());
        assertNotEquals(entry, entry.withPriority(3));
        assertNotEquals(entry, entry.withDelay(Duration.ofSeconds(2)));
        assertNotEquals(entry, Entry.of("j").withPriority(2).withDelay(Duration.ofSeconds(1)));
        assertEquals(Entry.of(null), Entry.of(null));
        assertEquals("Entry[key=k, priority=2, delay=PT1S]", entry.toString());
    }

}
