package io.workqueue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Modifier;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The rule that lets the API's value types grow: each is a final class with no public
 * constructor, made through a builder or a static factory, so a later release can add a property
 * (an accessor, a builder method or factory overload) without breaking code compiled against this
 * one. A record, or a public constructor, would make every new property a breaking change.
 */
class ValueTypesTest {

    @ParameterizedTest
    @ValueSource(classes = {WorkQueueConfig.class, WorkerOptions.class, Entry.class, Item.class, Stats.class,
            Horizon.class})
    void aValueTypeIsAFinalClassWithoutPublicConstructors(Class<?> type) {
        assertFalse(type.isRecord(), type + " must not be a record: its canonical constructor is public");
        assertTrue(Modifier.isFinal(type.getModifiers()), type + " must be final");
        assertEquals(0, type.getConstructors().length, type + " must not have a public constructor");
    }

    @Test
    void anItemIsAValue() {
        Item<String> item = Item.of("a", 2, 1, false);
        assertEquals("a", item.key());
        assertEquals(2, item.priority());
        assertEquals(1, item.attempts());
        assertFalse(item.reclaimed());
        assertEquals(item, Item.of("a", 2, 1, false));
        assertEquals(item.hashCode(), Item.of("a", 2, 1, false).hashCode());
        assertNotEquals(item, Item.of("b", 2, 1, false));
        assertNotEquals(item, Item.of("a", 3, 1, false));
        assertNotEquals(item, Item.of("a", 2, 2, false));
        assertNotEquals(item, Item.of("a", 2, 1, true));
        assertEquals("Item[key=a, priority=2, attempts=1, reclaimed=false]", item.toString());
        assertThrows(NullPointerException.class, () -> Item.of(null, 0, 1, false), "a claim never hands out a null key");
    }

    @Test
    void statsAreAValue() {
        Stats stats = Stats.of(6, 5, 4, 3, 2, Duration.ofSeconds(1));
        assertEquals(6, stats.pending());
        assertEquals(5, stats.ready());
        assertEquals(4, stats.leased());
        assertEquals(3, stats.stalled());
        assertEquals(2, stats.completed());
        assertEquals(Duration.ofSeconds(1), stats.oldestReadyAge());
        assertEquals(stats, Stats.of(6, 5, 4, 3, 2, Duration.ofSeconds(1)));
        assertEquals(stats.hashCode(), Stats.of(6, 5, 4, 3, 2, Duration.ofSeconds(1)).hashCode());
        assertNotEquals(stats, Stats.of(0, 5, 4, 3, 2, Duration.ofSeconds(1)));
        assertNotEquals(stats, Stats.of(6, 0, 4, 3, 2, Duration.ofSeconds(1)));
        assertNotEquals(stats, Stats.of(6, 5, 0, 3, 2, Duration.ofSeconds(1)));
        assertNotEquals(stats, Stats.of(6, 5, 4, 0, 2, Duration.ofSeconds(1)));
        assertNotEquals(stats, Stats.of(6, 5, 4, 3, 0, Duration.ofSeconds(1)));
        assertNotEquals(stats, Stats.of(6, 5, 4, 3, 2, Duration.ZERO));
        assertNotEquals(stats, Stats.of(6, 5, 4, 3, 2, true, Duration.ofSeconds(1)));
        assertEquals(stats, Stats.of(6, 5, 4, 3, 2, false, Duration.ofSeconds(1)));
        assertEquals("Stats[pending=6, ready=5, leased=4, stalled=3, completed=2, oldestReadyAge=PT1S]",
                stats.toString());
        assertThrows(NullPointerException.class, () -> Stats.of(0, 0, 0, 0, 0, null));
    }
}
