package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The cursor rules of {@link ClaimCursors}, on their own; ClaimCursorsIT runs them against the server. */
class ClaimCursorsTest {
    private static final long SLACK = ClaimCursors.SLACK_MICROS;
    private static final long NOW = 1_000_000_000_000L;

    @Test
    void theFirstClaimIsASweepAndOnlyOneSweepRunsAtATime() {
        ClaimCursors cursors = new ClaimCursors(0);
        assertTrue(cursors.plan(0).sweep());
        ClaimCursors.Plan second = cursors.plan(0);
        assertFalse(second.sweep());
        assertEquals(0, second.priorities().length);
    }

    @Test
    void aSweepWaitsFiftyTimesTheLastOnesDurationAndAtLeastTheMinimum() {
        ClaimCursors cursors = new ClaimCursors(0);
        cursors.plan(0);
        long took = TimeUnit.MILLISECONDS.toNanos(600);
        cursors.sweepEnded(took, took);
        long next = took + 50 * took;
        assertFalse(cursors.plan(next - 1).sweep());
        assertTrue(cursors.plan(next).sweep());

        cursors.sweepEnded(next + 1, 1);
        assertFalse(cursors.plan(next + ClaimCursors.MIN_SWEEP_INTERVAL_NANOS).sweep());
        assertTrue(cursors.plan(next + 1 + ClaimCursors.MIN_SWEEP_INTERVAL_NANOS).sweep());
    }

    @Test
    void aBandThisInstanceWritesToIsReadFromItsHeadUntilAClaimReadsIt() {
        ClaimCursors cursors = new ClaimCursors(0);
        cursors.plan(0); // the sweep, still running
        cursors.bandSeen(0);
        cursors.bandSeen(5);
        ClaimCursors.Plan plan = cursors.plan(0);
        assertFalse(plan.sweep());
        assertArrayEquals(new Object[] {5, 0}, plan.priorities()); // claim order: highest first
        assertArrayEquals(new Object[] {ClaimCursors.HEAD, ClaimCursors.HEAD}, plan.fromMicros());
    }

    @Test
    void bandsReadToTheirEndMoveToTheClaimsNowLessTheSlack() {
        ClaimCursors cursors = new ClaimCursors(0);
        cursors.plan(0);
        cursors.bandSeen(5);
        cursors.bandSeen(0);
        ClaimCursors.Plan plan = cursors.plan(0);
        cursors.claimed(plan, 10, new Integer[] {5, 0}, new Long[] {NOW - 9_000_000, NOW - 8_000_000}, NOW);
        assertEquals(Map.of(5, NOW - SLACK, 0, NOW - SLACK), cursors.snapshot());
    }

    @Test
    void theBandTheLimitStoppedInMovesToItsLastItemAndLowerBandsStay() {
        ClaimCursors cursors = new ClaimCursors(0);
        cursors.plan(0);
        cursors.bandSeen(9);
        cursors.bandSeen(5);
        cursors.bandSeen(0);
        ClaimCursors.Plan plan = cursors.plan(0);
        cursors.claimed(plan, 3, new Integer[] {9, 5, 5}, new Long[] {NOW - 30_000_000, NOW - 20_000_000,
                NOW - 10_000_000}, NOW);
        assertEquals(Map.of(9, NOW - SLACK, 5, NOW - 10_000_000, 0, ClaimCursors.HEAD), cursors.snapshot());
    }

    @Test
    void theBandTheLimitStoppedInNeverPassesTheSlackBound() {
        ClaimCursors cursors = new ClaimCursors(0);
        cursors.plan(0);
        cursors.bandSeen(0);
        ClaimCursors.Plan plan = cursors.plan(0);
        cursors.claimed(plan, 1, new Integer[] {0}, new Long[] {NOW}, NOW);
        assertEquals(Map.of(0, NOW - SLACK), cursors.snapshot());
    }

    @Test
    void cursorsNeverMoveBack() {
        ClaimCursors cursors = new ClaimCursors(0);
        cursors.plan(0);
        cursors.bandSeen(0);
        ClaimCursors.Plan plan = cursors.plan(0);
        cursors.claimed(plan, 10, new Integer[0], new Long[0], NOW);
        cursors.claimed(plan, 10, new Integer[0], new Long[0], NOW - 5_000_000); // an older, slower claim
        assertEquals(Map.of(0, NOW - SLACK), cursors.snapshot());
    }

    @Test
    void aSweepLearnsTheBandsItLeasedFromAndMovesEveryBandAboveWhereItStopped() {
        ClaimCursors cursors = new ClaimCursors(0);
        cursors.bandSeen(7); // known, but nothing in it was due
        ClaimCursors.Plan sweep = cursors.plan(0);
        assertTrue(sweep.sweep());
        cursors.claimed(sweep, 2, new Integer[] {3, 1}, new Long[] {NOW - 4_000_000, NOW - 3_000_000}, NOW);
        assertEquals(Map.of(7, NOW - SLACK, 3, NOW - SLACK, 1, NOW - 3_000_000), cursors.snapshot());
    }

    @Test
    void aClaimThatReadBandsBeforeOneAppearedLeavesTheNewBandAtItsHead() {
        ClaimCursors cursors = new ClaimCursors(0);
        cursors.plan(0);
        cursors.bandSeen(0);
        ClaimCursors.Plan plan = cursors.plan(0);
        cursors.bandSeen(4); // written while the claim ran: the claim did not read it
        cursors.claimed(plan, 10, new Integer[0], new Long[0], NOW);
        assertEquals(Map.of(0, NOW - SLACK, 4, ClaimCursors.HEAD), cursors.snapshot());
    }

    @Test
    void withMoreBandsThanCursorsServeEveryClaimReadsFromTheHeadOutsideTheSweepSchedule() {
        ClaimCursors cursors = new ClaimCursors(0);
        assertTrue(cursors.plan(0) == ClaimCursors.Plan.SWEEP);
        for (int band = 0; band < ClaimCursors.MAX_BANDS; band++) {
            cursors.bandSeen(band);
        }
        assertFalse(cursors.plan(0).sweep(), "at the limit, cursors still");
        cursors.bandSeen(-1);
        ClaimCursors.Plan plan = cursors.plan(0);
        assertTrue(plan == ClaimCursors.Plan.FROM_HEAD, "past it, from the head");
        assertTrue(plan.sweep());
        assertTrue(cursors.plan(0) == ClaimCursors.Plan.FROM_HEAD, "and not only once: the scheduled sweep still runs");
    }
}
