package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.r2dbc.spi.R2dbcNonTransientResourceException;
import io.workqueue.internal.QueueMetrics;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Sinks;
import org.junit.jupiter.api.extension.ExtendWith;
import io.workqueue.testing.ExpectedLogs;

/** {@link CursorLook}'s pacing and what it does with what it finds, on a clock of the test's. */
@ExtendWith(ExpectedLogs.class)
class CursorLookTest {
    private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);
    private static final long NOW_MICROS = 1_000_000_000_000L;

    private final AtomicLong clock = new AtomicLong(1_000 * MS);
    private final ClaimCursors cursors = new ClaimCursors(clock.get());
    private final List<Sinks.One<CursorLook.Found>> statements = new ArrayList<>();
    private final AtomicInteger wakes = new AtomicInteger();
    private final List<Long> lookTimes = new ArrayList<>();
    private final CursorLook look = new CursorLook("q", cursors, () -> {
        Sinks.One<CursorLook.Found> statement = Sinks.one();
        statements.add(statement);
        return statement.asMono();
    }, wakes::incrementAndGet, new QueueMetrics() {
        @Override
        public void looked(long nanos, int bandsOpened) {
            lookTimes.add(nanos);
        }
    }, clock::get);

    private static CursorLook.Found found(long tookNanos, Integer[] bands, Long[] firstDue) {
        String[] keys = new String[firstDue.length];
        Arrays.fill(keys, "k");
        return new CursorLook.Found(bands, firstDue, keys, NOW_MICROS, tookNanos);
    }

    private void answer(CursorLook.Found found) {
        statements.get(statements.size() - 1).tryEmitValue(found);
    }

    private void fail(Throwable error) {
        statements.get(statements.size() - 1).tryEmitError(error);
    }

    @Test
    void oneLookAtATimeAndTheNextAfterTwentyTimesItsOwnDuration() {
        look.lookIfDue();
        look.lookIfDue();
        assertEquals(1, statements.size(), "one at a time");
        clock.addAndGet(5_000 * MS); // waiting for a connection, say: not the statement's time
        answer(found(30 * MS, new Integer[0], new Long[0]));
        assertEquals(List.of(30 * MS), lookTimes);

        clock.addAndGet(20 * 30 * MS - 1);
        look.lookIfDue();
        assertEquals(1, statements.size(), "20 x 30 ms have not passed since it ended");
        clock.addAndGet(1);
        look.lookIfDue();
        assertEquals(2, statements.size());
    }

    @Test
    void aQuickLookIsFollowedAfterTheMinimumInterval() {
        look.lookIfDue();
        answer(found(MS / 10, new Integer[0], new Long[0]));
        clock.addAndGet(CursorLook.MIN_INTERVAL_NANOS - 1);
        look.lookIfDue();
        assertEquals(1, statements.size());
        clock.addAndGet(1);
        look.lookIfDue();
        assertEquals(2, statements.size());
    }

    @Test
    void aLookThatOpensABandWakesTheClaimersAndOneThatOpensNothingDoesNot() {
        look.lookIfDue();
        answer(found(MS, new Integer[] {0}, new Long[] {NOW_MICROS - 10}));
        assertEquals(1, wakes.get(), "band 0 was not known: opened");
        assertEquals(Map.of(0, NOW_MICROS - 10), cursors.snapshot());

        clock.addAndGet(CursorLook.MIN_INTERVAL_NANOS);
        look.lookIfDue();
        answer(found(MS, new Integer[] {0}, new Long[] {NOW_MICROS}));
        assertEquals(1, wakes.get(), "ahead of the cursor: nothing claims would miss");

        clock.addAndGet(CursorLook.MIN_INTERVAL_NANOS);
        look.lookIfDue();
        answer(found(MS, new Integer[] {0}, new Long[] {NOW_MICROS - 500}));
        assertEquals(2, wakes.get(), "behind the cursor: opened");
    }

    @Test
    void failedLooksBackOffDoublingUpToTheCapAndASuccessResetsIt() {
        List<Long> gaps = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            look.lookIfDue();
            fail(new R2dbcNonTransientResourceException("connection refused"));
            long end = clock.get();
            int before = statements.size();
            while (statements.size() == before) {
                clock.addAndGet(MS);
                look.lookIfDue();
            }
            gaps.add(clock.get() - end);
        }
        assertEquals(200 * MS, gaps.get(0));
        assertEquals(400 * MS, gaps.get(1));
        assertEquals(800 * MS, gaps.get(2));
        assertEquals(CursorLook.MAX_BACKOFF_NANOS, gaps.get(11));
        assertTrue(gaps.stream().allMatch(gap -> gap <= CursorLook.MAX_BACKOFF_NANOS), gaps::toString);

        answer(found(MS, new Integer[0], new Long[0]));
        look.lookIfDue();
        fail(new R2dbcNonTransientResourceException("connection refused"));
        int before = statements.size();
        clock.addAndGet(CursorLook.MIN_INTERVAL_NANOS);
        look.lookIfDue();
        assertEquals(before + 1, statements.size(), "a success started the back-off over");
    }

    @Test
    void aLookRefusedATableLockIsTriedAgainAfterTheMinimumIntervalEveryTime() {
        for (int i = 0; i < 5; i++) {
            look.lookIfDue();
            fail(new R2dbcNonTransientResourceException("canceling statement due to lock timeout", "55P03"));
            int before = statements.size();
            clock.addAndGet(CursorLook.MIN_INTERVAL_NANOS);
            look.lookIfDue();
            assertEquals(before + 1, statements.size(), "attempt " + i);
        }
    }

    @Test
    void aStatementThatThrowsIsAFailedLookNotAStuckOne() {
        AtomicInteger calls = new AtomicInteger();
        CursorLook throwing = new CursorLook("q", cursors, () -> {
            calls.incrementAndGet();
            throw new IllegalStateException("no connection factory today");
        }, wakes::incrementAndGet, QueueMetrics.NONE, clock::get);
        throwing.lookIfDue();
        clock.addAndGet(CursorLook.MIN_INTERVAL_NANOS);
        throwing.lookIfDue();
        assertEquals(2, calls.get());
        assertFalse(cursors.snapshot().containsKey(0));
    }

    @Test
    void aStatementThatEndsEmptyIsAFailedLook() {
        look.lookIfDue();
        statements.get(0).tryEmitEmpty();
        clock.addAndGet(CursorLook.MIN_INTERVAL_NANOS);
        look.lookIfDue();
        assertEquals(2, statements.size());
        assertEquals(List.of(), lookTimes);
    }

    @Test
    void theObserverSeesEveryLookEnd() {
        List<CursorLook.Ended> ended = new ArrayList<>();
        look.observeForTests(ended::add);
        look.lookIfDue();
        answer(found(MS, new Integer[] {3}, new Long[] {NOW_MICROS}));
        assertEquals(1, ended.size());
        assertTrue(ended.get(0).succeeded());
        assertEquals(1, ended.get(0).opened());
    }
}
