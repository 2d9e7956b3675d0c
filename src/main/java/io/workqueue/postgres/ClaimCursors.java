package io.workqueue.postgres;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentNavigableMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Where this queue instance's claims start reading each priority band of the due index, so that a
 * claim does not walk the history in front of it.
 *
 * <p>Why: a claim's index scan visits the heap for every entry it passes. Entries of items completed
 * (or deleted) recently point at row versions VACUUM may not remove while any transaction holds the
 * horizon back, and in claim order they sit exactly at the head of each band. Starting every claim
 * at the head made its cost grow with the time the horizon had been held (1,400 times the buffers
 * after three minutes, docs/benchmarks/pressure). A claim that seeks to a cursor instead reads only
 * what arrived since the previous claim, plus a fixed slack.
 *
 * <p>A cursor is an {@code available_at} (in microseconds since the epoch, on the database clock)
 * below which a band held nothing claimable at the last claim that read it: every band a claim
 * scanned to its end moves to that claim's {@code now()} less {@link #SLACK_MICROS}; the band the
 * claim's limit stopped in moves to the last item it handed out (or that slack bound, whichever is
 * earlier). Cursors only move forward.
 *
 * <p>What a cursor can miss, because it became claimable behind it: a lease that lapsed, a write
 * that committed more than the slack after its transaction began (a long transactional enqueue),
 * a claim that rolled back, a priority raised on a pending item, and a band this instance has not
 * seen yet (another process enqueued a new priority). A <em>sweep</em> finds all of them: an
 * ordinary claim from the head of the index, in exact claim order. Sweeps run at most every
 * {@link #MIN_SWEEP_INTERVAL_NANOS}, and never more often than {@link #SWEEP_COST_FACTOR} times the
 * last sweep's duration, so however much history a held horizon leaves, sweeping takes at most
 * about 2 % of the claim path's time. One sweep runs at a time per instance. With more than
 * {@link #MAX_BANDS} bands known, every claim reads from the head.
 *
 * <p>Thread-safe and lock-free: claims from many loops update it concurrently.
 */
final class ClaimCursors {
    /**
     * How far behind a claim's {@code now()} an exhausted band's cursor stays: covers writes whose
     * statement began before the claim and committed after its snapshot (a group commit's upsert
     * takes milliseconds). The cost is the entries of that window, re-read by every claim.
     */
    static final long SLACK_MICROS = 500_000;
    /** The least time between two sweeps of one instance. */
    static final long MIN_SWEEP_INTERVAL_NANOS = TimeUnit.MILLISECONDS.toNanos(200);
    /** The next sweep waits this many times the last one's duration: sweeps cost at most 1/50. */
    static final int SWEEP_COST_FACTOR = 50;

    /**
     * The most bands a claim reads from cursors: each costs the claim one index seek, so with more
     * distinct priorities in use than this (priorities made from timestamps, say) every claim reads
     * from the head instead, as before cursors.
     */
    static final int MAX_BANDS = 32;

    /** The plan of one claim: from the head of the index ({@code sweep}), or from these bands' cursors. */
    record Plan(boolean sweep, Integer[] priorities, Long[] fromMicros) {
        /** The scheduled sweep: {@link #sweepEnded} must follow it. */
        static final Plan SWEEP = new Plan(true, new Integer[0], new Long[0]);
        /** A claim from the head outside the sweep schedule: too many bands for cursors. */
        static final Plan FROM_HEAD = new Plan(true, new Integer[0], new Long[0]);
    }

    /**
     * The cursor of a band read from its head: about 4370 BC, before any {@code available_at} the
     * queue writes and still a timestamp PostgreSQL accepts (its range starts at 4713 BC).
     */
    static final long HEAD = -200_000_000_000_000_000L;

    /** Band to cursor, highest priority first (claim order). */
    private final ConcurrentNavigableMap<Integer, Long> cursors =
            new ConcurrentSkipListMap<>(Collections.reverseOrder());
    private final AtomicBoolean sweeping = new AtomicBoolean();
    /** {@code System.nanoTime()} from which the next sweep may run. */
    private final AtomicLong nextSweepNanos;

    ClaimCursors(long nowNanos) {
        this.nextSweepNanos = new AtomicLong(nowNanos);
    }

    /**
     * The next claim's plan. {@link Plan#SWEEP} is handed to one caller at a time, and that caller
     * must call {@link #sweepEnded} however the claim ends.
     */
    Plan plan(long nowNanos) {
        if (nowNanos - nextSweepNanos.get() >= 0 && sweeping.compareAndSet(false, true)) {
            return Plan.SWEEP;
        }
        if (cursors.size() > MAX_BANDS) {
            return Plan.FROM_HEAD;
        }
        List<Integer> priorities = new ArrayList<>();
        List<Long> from = new ArrayList<>();
        for (Map.Entry<Integer, Long> band : cursors.entrySet()) {
            priorities.add(band.getKey());
            from.add(band.getValue());
        }
        return new Plan(false, priorities.toArray(Integer[]::new), from.toArray(Long[]::new));
    }

    /** Ends the sweep {@link #plan} handed out, however it ended, after {@code tookNanos}. */
    void sweepEnded(long endNanos, long tookNanos) {
        long wait = Math.max(MIN_SWEEP_INTERVAL_NANOS, SWEEP_COST_FACTOR * Math.max(tookNanos, 0));
        nextSweepNanos.set(endNanos + wait);
        sweeping.set(false);
    }

    /** A band this instance writes to: its claims read it from the head until a claim reads it. */
    void bandSeen(int priority) {
        cursors.putIfAbsent(priority, HEAD);
    }

    /**
     * Moves cursors after a claim under {@code plan} that asked for {@code limit} and leased the
     * items with these priorities and {@code available_at}s, in claim order, at {@code nowMicros}.
     */
    void claimed(Plan plan, int limit, Integer[] priorities, Long[] availableMicros, long nowMicros) {
        long exhausted = nowMicros - SLACK_MICROS;
        int n = priorities.length;
        for (Integer priority : priorities) {
            bandSeen(priority);
        }
        // Claim order is priority first: every band above the one the limit stopped in was read to
        // its end. Under the limit, every band read was.
        boolean stoppedByLimit = n > 0 && n >= limit;
        int stoppedIn = stoppedByLimit ? priorities[n - 1] : Integer.MIN_VALUE;
        Iterable<Integer> read = plan.sweep() ? cursors.keySet() : Arrays.asList(plan.priorities());
        for (Integer band : read) {
            if (!stoppedByLimit || band > stoppedIn) {
                advance(band, exhausted);
            }
        }
        if (stoppedByLimit) {
            advance(stoppedIn, Math.min(availableMicros[n - 1], exhausted));
        }
    }

    private void advance(int band, long to) {
        cursors.merge(band, to, Math::max);
    }

    /** The current cursors, highest priority first; for tests. */
    Map<Integer, Long> snapshot() {
        return Map.copyOf(cursors);
    }
}
