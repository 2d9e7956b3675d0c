package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** {@link ClaimedRows}: the claim's unsorted arrays, put into claim order on the client. */
class ClaimedRowsTest {
    @Test
    void rowsComeOutByPriorityThenAvailabilityThenKeyWithEveryArrayMovedAlike() {
        ClaimedRows rows = ClaimedRows.inClaimOrder(
                new String[] {"b", "a", "c", "d", "e"},
                new Integer[] {0, 0, 5, 0, -1},
                new Integer[] {1, 2, 3, 4, 5},
                new Integer[] {0, 1, 2, 0, 0},
                new Long[] {10L, 10L, 99L, 5L, 1L});

        assertArrayEquals(new String[] {"c", "d", "a", "b", "e"}, rows.keys());
        assertArrayEquals(new Integer[] {5, 0, 0, 0, -1}, rows.priorities());
        assertArrayEquals(new Integer[] {3, 4, 2, 1, 5}, rows.attempts());
        assertArrayEquals(new Integer[] {2, 0, 1, 0, 0}, rows.priorLeases());
        assertArrayEquals(new Long[] {99L, 5L, 10L, 10L, 1L}, rows.availableMicros());
    }

    @Test
    void everyIntPriorityIsOrderedHighestFirstTheExtremesIncluded() {
        ClaimedRows rows = ClaimedRows.inClaimOrder(
                new String[] {"min", "max", "zero", "minus-one", "one", "min+1", "max-1"},
                new Integer[] {Integer.MIN_VALUE, Integer.MAX_VALUE, 0, -1, 1, Integer.MIN_VALUE + 1,
                        Integer.MAX_VALUE - 1},
                new Integer[] {1, 1, 1, 1, 1, 1, 1},
                new Integer[] {0, 0, 0, 0, 0, 0, 0},
                new Long[] {1L, 1L, 1L, 1L, 1L, 1L, 1L});

        assertArrayEquals(new String[] {"max", "max-1", "one", "zero", "minus-one", "min+1", "min"}, rows.keys());
    }

    @Test
    void keysCompareByCodePointAsCollateCDoesNotByUtf16Units() {
        // U+FF5E is one UTF-16 unit above the surrogates of U+1F600 but a lower code point.
        String fullwidth = "\uFF5E";
        String emoji = "\uD83D\uDE00";
        ClaimedRows rows = ClaimedRows.inClaimOrder(new String[] {emoji, fullwidth}, new Integer[] {0, 0},
                new Integer[] {1, 1}, new Integer[] {0, 0}, new Long[] {7L, 7L});
        assertArrayEquals(new String[] {fullwidth, emoji}, rows.keys());
    }

    @Test
    void nothingLeasedIsAllNullsAndArraysThatDoNotLineUpAreRefused() {
        assertSame(ClaimedRows.NONE, ClaimedRows.inClaimOrder(null, null, null, null, null));
        assertThrows(IllegalStateException.class, () -> ClaimedRows.inClaimOrder(new String[] {"a"},
                new Integer[] {0, 1}, new Integer[] {1}, new Integer[] {0}, new Long[] {1L}));
        assertThrows(IllegalStateException.class, () -> ClaimedRows.inClaimOrder(new String[] {"a"},
                null, new Integer[] {1}, new Integer[] {0}, new Long[] {1L}));
    }
}
