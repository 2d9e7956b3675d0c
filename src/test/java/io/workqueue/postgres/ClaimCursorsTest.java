package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The cursor rules of {@link ClaimCursors}, on their own; ClaimCursorsIT runs them against the server. */
class ClaimCursorsTest {
    private static final long SLACK = ClaimCursors.SLACK_MICROS;
    private static final long NOW = 1_000_000_000_000L;
    private static final Integer[] NONE = new Integer[0];
    private static final Long[] NO_MICROS = new Long[0];

    private static final String[] NO_KEYS = new String[0];

    /** Cursors after a first look that found these bands' first due items. */
    private static ClaimCursors lookedAt(Integer[] bands, Long[] firstDue) {
        ClaimCursors cursors = new ClaimCursors(0);
        String[] keys = new String[firstDue.length];
        Arrays.fill(keys, ClaimCursors.FIRST_KEY);
        cursors.looked(bands, firstDue, keys, NOW, 0);
        return cursors;
    }

    @Test
    void untilTheFirstLookEndsEveryClaimReadsFromTheHead() {
        ClaimCursors cursors = new ClaimCursors(0);
        cursors.bandSeen(0, 0);
        assertSame(ClaimCursors.Plan.FROM_HEAD, cursors.plan(0));
        cursors.looked(NONE, NO_MICROS, NO_KEYS, NOW, 0);
        ClaimCursors.Plan plan = cursors.plan(0);
        assertFalse(plan.fromHead());
        assertArrayEquals(new Integer[] {0}, plan.priorities());
    }

    @Test
    void aLookPutsEachBandItFoundAtItsFirstDueItemAndMovesTheOthersToItsNowLessTheSlack() {
        ClaimCursors cursors = new ClaimCursors(0);
        cursors.bandSeen(3, 0);
        cursors.bandSeen(-4, 0);
        // Band 9 was not known: opened. Band -4's first due item lies ahead of its head: not.
        assertEquals(1, cursors.looked(new Integer[] {9, -4}, new Long[] {NOW - 7_000_000, NOW - 5_000_000},
                new String[] {"k1", "k2"}, NOW, 0));
        assertEquals(Map.of(9, NOW - 7_000_000, 3, NOW - SLACK, -4, NOW - 5_000_000), cursors.snapshot());
        assertArrayEquals(new Integer[] {9, 3, -4}, cursors.plan(0).priorities()); // claim order: highest first
    }

    @Test
    void aLookMovesACursorBackToWhatBecameDueBehindItAndCountsOnlyThat() {
        ClaimCursors cursors = lookedAt(new Integer[] {0, 1}, new Long[] {NOW - 100, NOW - 100});
        ClaimCursors.Plan plan = cursors.plan(0);
        cursors.claimed(plan, 10, new Integer[] {1, 0}, new Long[] {NOW - 100, NOW - 100},
                new String[] {"k1", "k2"}, NOW + 1_000_000, 0);
        assertEquals(Map.of(1, NOW + 1_000_000 - SLACK, 0, NOW + 1_000_000 - SLACK), cursors.snapshot());

        // Band 1's first due item lies ahead of its cursor: forward, nothing opened. Band 0's behind.
        int opened = cursors.looked(new Integer[] {1, 0}, new Long[] {NOW + 600_000, NOW - 50},
                new String[] {"k1", "k2"}, NOW + 1_200_000, 0);

        assertEquals(1, opened);
        assertEquals(Map.of(1, NOW + 600_000, 0, NOW - 50), cursors.snapshot());
    }

    @Test
    void aLookMovesACursorForwardNoFurtherThanItsNowLessTheSlack() {
        ClaimCursors cursors = lookedAt(new Integer[] {0}, new Long[] {NOW - 10_000_000});
        // An upsert in flight when the look read may still commit just behind its first due item.
        cursors.looked(new Integer[] {0}, new Long[] {NOW - 1}, new String[] {"k1"}, NOW, 0);
        assertEquals(Map.of(0, NOW - SLACK), cursors.snapshot());
    }

    /**
     * The generation rule. A claim read band 0 from its cursor; a look, whose snapshot may be newer
     * than the claim's, then found an item due behind it; the claim ends afterwards. Moving the
     * cursor on to the claim's end, as an ordinary claim would, would put the item behind it again,
     * and it would wait for another look. The claim must leave the cursor where the look put it.
     */
    @Test
    void aClaimThatReadABandBeforeALookMovedItBackDoesNotMoveItForwardAgain() {
        ClaimCursors cursors = lookedAt(new Integer[] {0}, new Long[] {NOW});
        ClaimCursors.Plan before = cursors.plan(0);
        cursors.looked(new Integer[] {0}, new Long[] {NOW - 2_000_000}, new String[] {"k1"}, NOW + 3_000_000, 0);

        cursors.claimed(before, 10, NONE, NO_MICROS, NO_KEYS, NOW + 3_000_000, 0);

        assertEquals(Map.of(0, NOW - 2_000_000), cursors.snapshot());
        // A claim planned after the look moves it as usual.
        cursors.claimed(cursors.plan(0), 10, NONE, NO_MICROS, NO_KEYS, NOW + 3_000_000, 0);
        assertEquals(Map.of(0, NOW + 3_000_000 - SLACK), cursors.snapshot());
    }

    @Test
    void aClaimThatReadABandBeforeALookMovedItForwardStillMovesIt() {
        ClaimCursors cursors = lookedAt(new Integer[] {0}, new Long[] {NOW});
        ClaimCursors.Plan before = cursors.plan(0);
        cursors.looked(new Integer[] {0}, new Long[] {NOW + 10}, new String[] {"k1"}, NOW + 20, 0);
        cursors.claimed(before, 10, NONE, NO_MICROS, NO_KEYS, NOW + 5_000_000, 0);
        assertEquals(Map.of(0, NOW + 5_000_000 - SLACK), cursors.snapshot());
    }

    @Test
    void bandsReadToTheirEndMoveToTheClaimsNowLessTheSlack() {
        ClaimCursors cursors = lookedAt(new Integer[] {5, 0}, new Long[] {NOW - 9_000_000, NOW - 8_000_000});
        cursors.claimed(cursors.plan(0), 10, new Integer[] {5, 0}, new Long[] {NOW - 9_000_000, NOW - 8_000_000},
                new String[] {"k1", "k2"}, NOW, 0);
        assertEquals(Map.of(5, NOW - SLACK, 0, NOW - SLACK), cursors.snapshot());
    }

    @Test
    void theBandTheLimitStoppedInMovesToItsLastItemAndLowerBandsStay() {
        ClaimCursors cursors = lookedAt(new Integer[] {9, 5, 0},
                new Long[] {NOW - 30_000_000, NOW - 20_000_000, NOW - 40_000_000});
        cursors.claimed(cursors.plan(0), 3, new Integer[] {9, 5, 5},
                new Long[] {NOW - 30_000_000, NOW - 20_000_000, NOW - 10_000_000},
                new String[] {"k1", "k2", "k3"}, NOW, 0);
        assertEquals(Map.of(9, NOW - SLACK, 5, NOW - 10_000_000, 0, NOW - 40_000_000), cursors.snapshot());
    }

    @Test
    void theExtremePrioritiesAreBandsLikeAnyOther() {
        long old = NOW - 30_000_000;
        ClaimCursors cursors = lookedAt(new Integer[] {Integer.MAX_VALUE, 0, Integer.MIN_VALUE},
                new Long[] {old, old, old});
        ClaimCursors.Plan plan = cursors.plan(0);
        assertArrayEquals(new Integer[] {Integer.MAX_VALUE, 0, Integer.MIN_VALUE}, plan.priorities());
        // Stopped in MIN_VALUE: the bands above were read to their end.
        cursors.claimed(plan, 2, new Integer[] {Integer.MAX_VALUE, Integer.MIN_VALUE},
                new Long[] {old + 1, old + 2}, new String[] {"k1", "k2"}, NOW, 0);
        assertEquals(Map.of(Integer.MAX_VALUE, NOW - SLACK, 0, NOW - SLACK, Integer.MIN_VALUE, old + 2),
                cursors.snapshot());
        // Stopped in MAX_VALUE: none below it was read.
        ClaimCursors again = lookedAt(new Integer[] {Integer.MAX_VALUE, Integer.MIN_VALUE}, new Long[] {old, old});
        again.claimed(again.plan(0), 1, new Integer[] {Integer.MAX_VALUE}, new Long[] {old + 1},
                new String[] {"k1"}, NOW, 0);
        assertEquals(Map.of(Integer.MAX_VALUE, old + 1, Integer.MIN_VALUE, old), again.snapshot());
    }

    @Test
    void theBandTheLimitStoppedInNeverPassesTheSlackBound() {
        ClaimCursors cursors = lookedAt(new Integer[] {0}, new Long[] {NOW - 10_000_000});
        cursors.claimed(cursors.plan(0), 1, new Integer[] {0}, new Long[] {NOW}, new String[] {"k1"}, NOW, 0);
        assertEquals(Map.of(0, NOW - SLACK), cursors.snapshot());
    }

    @Test
    void claimsNeverMoveACursorBack() {
        ClaimCursors cursors = lookedAt(new Integer[] {0}, new Long[] {NOW - 10_000_000});
        ClaimCursors.Plan plan = cursors.plan(0);
        cursors.claimed(plan, 10, NONE, NO_MICROS, NO_KEYS, NOW, 0);
        cursors.claimed(plan, 10, NONE, NO_MICROS, NO_KEYS, NOW - 5_000_000, 0); // an older, slower claim
        assertEquals(Map.of(0, NOW - SLACK), cursors.snapshot());
    }

    @Test
    void aBandThisInstanceWritesIsReadFromItsHeadUntilAClaimReadsIt() {
        ClaimCursors cursors = lookedAt(NONE, NO_MICROS);
        ClaimCursors.Plan plan = cursors.plan(0);
        cursors.bandSeen(4, 0); // written while the claim ran: the claim did not read it
        cursors.claimed(plan, 10, NONE, NO_MICROS, NO_KEYS, NOW, 0);
        assertEquals(Map.of(4, ClaimCursors.HEAD), cursors.snapshot());
        ClaimCursors.Plan next = cursors.plan(0);
        assertArrayEquals(new Long[] {ClaimCursors.HEAD}, next.fromMicros());
        cursors.claimed(next, 10, NONE, NO_MICROS, NO_KEYS, NOW, 0);
        assertEquals(Map.of(4, NOW - SLACK), cursors.snapshot());
    }

    @Test
    void aBandUnusedForAMinuteIsForgottenButTheOneUsedLastStays() {
        long minute = ClaimCursors.IDLE_BAND_NANOS;
        long second = 1_000_000_000L;
        ClaimCursors cursors = new ClaimCursors(0);
        cursors.looked(new Integer[] {7, 3, 1}, new Long[] {NOW, NOW, NOW},
                new String[] {"k1", "k2", "k3"}, NOW, 0); // all used at 0
        cursors.bandSeen(1, 2 * second);
        cursors.claimed(cursors.plan(0), 10, new Integer[] {3}, new Long[] {NOW},
                new String[] {"k1"}, NOW, 30 * second);

        assertEquals(List.of(7, 3, 1), List.of(cursors.plan(minute).priorities()), "nothing idle over a minute yet");
        assertEquals(List.of(3, 1), List.of(cursors.plan(minute + 3 * second / 2).priorities()), "7 forgotten");
        assertEquals(List.of(3), List.of(cursors.plan(minute + 3 * second).priorities()), "1 too; 3 was used last");
        assertEquals(List.of(3), List.of(cursors.plan(10 * minute).priorities()), "the one used last stays");

        // A look finds a forgotten band again, and that opens it.
        assertEquals(1, cursors.looked(new Integer[] {7}, new Long[] {NOW + 5},
                new String[] {"k1"}, NOW + 10, 10 * minute));
        assertTrue(cursors.snapshot().containsKey(7));
    }

    @Test
    void withMoreBandsThanCursorsServeEveryClaimReadsFromTheHead() {
        ClaimCursors cursors = lookedAt(NONE, NO_MICROS);
        for (int band = 0; band < ClaimCursors.MAX_BANDS; band++) {
            cursors.bandSeen(band, 0);
        }
        assertFalse(cursors.plan(0).fromHead(), "at the limit, cursors still");
        cursors.bandSeen(-1, 0);
        assertSame(ClaimCursors.Plan.FROM_HEAD, cursors.plan(0), "past it, from the head");
    }

    @Test
    void aClaimFromTheHeadLearnsTheBandsItLeasedFromAndMovesNoCursor() {
        ClaimCursors cursors = new ClaimCursors(0);
        cursors.claimed(cursors.plan(0), 2, new Integer[] {3, 1}, new Long[] {NOW - 4, NOW - 3},
                new String[] {"k1", "k2"}, NOW, 0);
        cursors.looked(NONE, NO_MICROS, NO_KEYS, NOW, 0);
        assertEquals(Map.of(3, NOW - SLACK, 1, NOW - SLACK), cursors.snapshot());
    }

    @Test
    void theBandTheLimitStoppedInMovesToTheKeyOfItsLastItemWithinItsMicrosecond() {
        long enqueued = NOW - 10_000_000; // one enqueue statement: every key at one now()
        ClaimCursors cursors = lookedAt(new Integer[] {0}, new Long[] {enqueued});
        cursors.claimed(cursors.plan(0), 3, new Integer[] {0, 0, 0}, new Long[] {enqueued, enqueued, enqueued},
                new String[] {"a-1", "a-2", "a-3"}, NOW, 0);
        assertEquals(Map.of(0, new ClaimCursors.Position(enqueued, "a-3")), cursors.positions());
        ClaimCursors.Plan next = cursors.plan(0);
        assertArrayEquals(new Long[] {enqueued}, next.fromMicros());
        assertArrayEquals(new String[] {"a-3"}, next.fromKeys());
        // The next claim goes on from there, within the microsecond.
        cursors.claimed(next, 2, new Integer[] {0, 0}, new Long[] {enqueued, enqueued}, new String[] {"a-4", "a-5"},
                NOW, 0);
        assertEquals(Map.of(0, new ClaimCursors.Position(enqueued, "a-5")), cursors.positions());
    }

    @Test
    void aLookMovesACursorBackAndForwardWithinItsMicrosecondByKey() {
        long enqueued = NOW - 10_000_000;
        ClaimCursors cursors = lookedAt(new Integer[] {0}, new Long[] {enqueued});
        cursors.claimed(cursors.plan(0), 2, new Integer[] {0, 0}, new Long[] {enqueued, enqueued},
                new String[] {"m-5", "m-6"}, NOW, 0);

        // A lease lapsed on m-2, before the cursor's key in its microsecond: behind it, so opened.
        assertEquals(1, cursors.looked(new Integer[] {0}, new Long[] {enqueued}, new String[] {"m-2"}, NOW, 0));
        assertEquals(Map.of(0, new ClaimCursors.Position(enqueued, "m-2")), cursors.positions());
        // The first due item after the cursor's key: forward to it, nothing opened.
        assertEquals(0, cursors.looked(new Integer[] {0}, new Long[] {enqueued}, new String[] {"m-9"}, NOW, 0));
        assertEquals(Map.of(0, new ClaimCursors.Position(enqueued, "m-9")), cursors.positions());
    }

    @Test
    void keysWithinAMicrosecondCompareByCodePointAsTheServersCollationDoes() {
        // U+FF5E sorts after U+1F600 in UTF-16 units but before it by code point, as "C" sorts them.
        ClaimCursors.Position fullwidth = new ClaimCursors.Position(NOW, "\uFF5E");
        ClaimCursors.Position emoji = new ClaimCursors.Position(NOW, "\uD83D\uDE00");
        assertTrue(fullwidth.before(emoji));
        assertFalse(emoji.before(fullwidth));
        assertTrue(ClaimCursors.Position.at(NOW).before(new ClaimCursors.Position(NOW, "\u0001")));
        assertTrue(new ClaimCursors.Position(NOW - 1, "\uD83D\uDE00").before(new ClaimCursors.Position(NOW, "")));
    }
}
