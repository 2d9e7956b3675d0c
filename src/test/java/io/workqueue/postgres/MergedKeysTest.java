package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The sharing-out of one merged complete's result among its callers. */
class MergedKeysTest {

    @Test
    void theUnionNamesEachKeyOnceInFirstSeenOrder() {
        assertArrayEquals(new String[] {"b", "a", "c"},
                MergedKeys.union(List.of(new String[] {"b", "a"}, new String[] {"a", "c"}, new String[0])));
    }

    @Test
    void eachCompletedKeyIsCreditedToTheFirstCallerThatNamedItSoCountsAddUp() {
        List<String[]> callers = List.of(new String[] {"a", "b"}, new String[] {"b", "c"}, new String[] {"a"});
        Set<String> completed = new HashSet<>(Set.of("a", "b", "c"));

        assertEquals(List.of(2L, 1L, 0L), MergedKeys.credit(callers, completed));
    }

    @Test
    void keysTheStatementDidNotCompleteAreCreditedToNobody() {
        // "x" was unknown or already completed: as if each call had run alone, it counts 0.
        List<String[]> callers = List.of(new String[] {"x", "a"}, new String[] {"x"});

        assertEquals(List.of(1L, 0L), MergedKeys.credit(callers, new HashSet<>(Set.of("a"))));
    }
}
