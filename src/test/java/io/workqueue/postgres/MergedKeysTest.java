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
    void whenNothingCompletesNoCallerIsCreditedEvenWithoutAList() {
        // No list and a count of 0: "none", never "all" (array_agg over no rows is NULL).
        List<String[]> callers = List.of(new String[] {"x"}, new String[] {"y", "z"});

        assertEquals(List.of(0L, 0L), MergedKeys.credit(callers, 0, null));
        assertEquals(List.of(0L, 0L), MergedKeys.credit(callers, 0, Set.of()));
    }

    @Test
    void aMissingListMeansEveryKeyOnlyWhenTheCountIsEveryKeyNamed() {
        // Three distinct keys named; a count short of that with no list names no key, so nobody is
        // credited rather than everybody: a count may fall short, it never runs over.
        List<String[]> callers = List.of(new String[] {"a", "b"}, new String[] {"b", "c"});

        assertEquals(List.of(2L, 1L), MergedKeys.credit(callers, 3, null));
        assertEquals(List.of(0L, 0L), MergedKeys.credit(callers, 2, null));
    }

    @Test
    void aLoneCallerGetsTheStatementsCount() {
        assertEquals(List.of(1L), MergedKeys.credit(List.<String[]>of(new String[] {"x", "a"}), 1, Set.of("a")));
    }
}
