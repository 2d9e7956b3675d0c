package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

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

        // The statement reports "every key completed" as a count and no list.
        assertEquals(List.of(2L, 1L, 0L), MergedKeys.credit(callers, 3, null));
        assertEquals(List.of(2L, 1L, 0L), MergedKeys.credit(callers, 3, Set.of("a", "b", "c")));
    }

    @Test
    void keysTheStatementDidNotCompleteAreCreditedToNobody() {
        // "x" was unknown or already completed: as if each call had run alone, it counts 0.
        List<String[]> callers = List.of(new String[] {"x", "a"}, new String[] {"x"});

        assertEquals(List.of(1L, 0L), MergedKeys.credit(callers, 1, Set.of("a")));
    }

    @Test
    void aLoneCallerGetsTheStatementsCount() {
        assertEquals(List.of(1L), MergedKeys.credit(List.<String[]>of(new String[] {"x", "a"}), 1, Set.of("a")));
    }
}
