package io.workqueue.postgres;

import io.workqueue.internal.base.CodePointOrder;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentNavigableMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.TimeUnit;
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
 * <p>A cursor is a {@link Position} in the band's claim order, an {@code available_at} (in
 * microseconds since the epoch, on the database clock) and a key, before which the band held nothing
 * due when it was last read. Claims move cursors forward: every band a claim scanned to its end moves
 * to that claim's {@code now()} less {@link #SLACK_MICROS}; the band the claim's limit stopped in
 * moves to the last item it handed out (or that slack bound, whichever is earlier). The key matters
 * because one enqueue statement gives every key it writes the same {@code now()}: a cursor that
 * stopped at a microsecond could move no further than the head of that statement's keys, and every
 * claim would pass again every one of them already leased (a backlog enqueued at once, passed
 * anew by each claim that drains it).
 *
 * <p>Claims alone would miss what becomes due behind a cursor: a lease that lapsed, a write that
 * committed more than the slack after its transaction began (a long transactional enqueue), a claim
 * that rolled back, a priority raised on a pending item, a band this instance has not seen (another
 * process enqueued a new priority), the database clock stepping back. A <em>look</em>
 * ({@link CursorLook}) finds all of them: a read of the first due item of every band, from the head
 * of the index, locking nothing. {@link #looked} moves each band's cursor to that item: back, if it
 * lies behind, so that the claims that follow hand out everything behind the cursor, claim after
 * claim, in claim order, before anything newer in the band; forward, if it lies ahead, so that
 * claims skip what the look walked. Until the first look ends, claims read from the head.
 *
 * <p>A look and a claim may interleave. A claim that read a band from a cursor a look has since moved
 * back may not move it forward again: its snapshot may predate what the look found. Each move back
 * gives the cursor a new <em>generation</em>, and a claim moves a cursor only if it is still at the
 * generation the claim read it at.
 *
 * <p>A band nobody used (claimed from, found due by a look, enqueued into) for
 * {@link #IDLE_BAND_NANOS} is forgotten, except the band used last; the next look finds it again if
 * it has something due. With more than {@link #MAX_BANDS} bands known, every claim reads from the
 * head.
 *
 * <p>Thread-safe and lock-free: claims from many loops and a look update it concurrently; each band's
 * cursor changes atomically.
 */
final class ClaimCursors {
    /**
     * How far behind a claim's {@code now()} an exhausted band's cursor stays: covers writes whose
     * statement began before the claim and committed after its snapshot (a group commit's upsert
     * takes milliseconds). The cost is the entries of that window, re-read by every claim.
     */
    static final long SLACK_MICROS = 500_000;

    /**
     * The most bands a claim reads from cursors: each costs the claim one index seek, so with more
     * distinct priorities in use than this (priorities made from timestamps, say) every claim reads
     * from the head instead.
     */
    static final int MAX_BANDS = 32;

    /** How long a band may go unused before it is forgotten. */
    static final long IDLE_BAND_NANOS = TimeUnit.MINUTES.toNanos(1);

    /** How often, at most, {@link #plan} looks for bands to forget. */
    private static final long FORGET_CHECK_NANOS = TimeUnit.SECONDS.toNanos(1);

    /**
     * The cursor of a band read from its head: about 4370 BC, before any {@code available_at} the
     * queue writes and still a timestamp PostgreSQL accepts (its range starts at 4713 BC).
     */
    static final long HEAD = -200_000_000_000_000_000L;

    /** The least key: a position with it lies before every item of its microsecond. */
    static final String FIRST_KEY = "";

    /**
     * A place in a band's claim order: an {@code available_at} in microseconds since the epoch, then
     * a key, compared by code point as {@code item_key COLLATE "C"} orders them.
     */
    record Position(long micros, String key) implements Comparable<Position> {
        /** Before every item of {@code micros}. */
        static Position at(long micros) {
            return new Position(micros, FIRST_KEY);
        }

        @Override
        public int compareTo(Position other) {
            int byTime = Long.compare(micros, other.micros);
            return byTime != 0 ? byTime : CodePointOrder.compare(key, other.key);
        }

        boolean before(Position other) {
            return compareTo(other) < 0;
        }

        static Position earlier(Position a, Position b) {
            return a.before(b) ? a : b;
        }

        static Position later(Position a, Position b) {
            return a.before(b) ? b : a;
        }
    }

    /** A band's cursor: where claims start reading it, the move back that put it there, its last use. */
    record Cursor(Position from, long generation, long usedNanos) {
        Cursor movedTo(Position to) {
            return new Cursor(to, generation, usedNanos);
        }

        Cursor usedAt(long nanos) {
            return new Cursor(from, generation, nanos);
        }
    }

    /**
     * The plan of one claim: from the head of the index ({@code fromHead}), or from these bands'
     * cursors ({@code fromMicros} and {@code fromKeys} side by side), at these generations, highest
     * priority first.
     */
    record Plan(boolean fromHead, Integer[] priorities, Long[] fromMicros, String[] fromKeys, long[] generations) {
        static final Plan FROM_HEAD = new Plan(true, new Integer[0], new Long[0], new String[0], new long[0]);
    }

    /** Band to cursor, highest priority first (claim order). */
    private final ConcurrentNavigableMap<Integer, Cursor> cursors =
            new ConcurrentSkipListMap<>(Collections.reverseOrder());
    private final AtomicLong generations = new AtomicLong();
    private final AtomicLong lastForgetCheck;
    /** Whether a look has ended: before that, claims read from the head. */
    private volatile boolean looked;

    ClaimCursors(long nowNanos) {
        this.lastForgetCheck = new AtomicLong(nowNanos);
    }

    /** The next claim's plan. */
    Plan plan(long nowNanos) {
        forgetIdleBands(nowNanos);
        if (!looked || cursors.size() > MAX_BANDS) {
            return Plan.FROM_HEAD;
        }
        List<Integer> priorities = new ArrayList<>(cursors.size());
        List<Long> fromMicros = new ArrayList<>(cursors.size());
        List<String> fromKeys = new ArrayList<>(cursors.size());
        List<Long> generationsRead = new ArrayList<>(cursors.size());
        for (Map.Entry<Integer, Cursor> band : cursors.entrySet()) {
            priorities.add(band.getKey());
            fromMicros.add(band.getValue().from().micros());
            fromKeys.add(band.getValue().from().key());
            generationsRead.add(band.getValue().generation());
        }
        return new Plan(false, priorities.toArray(Integer[]::new), fromMicros.toArray(Long[]::new),
                fromKeys.toArray(String[]::new), generationsRead.stream().mapToLong(Long::longValue).toArray());
    }

    /**
     * A band this instance writes to: its claims read it from the head until a claim or a look moves
     * its cursor; a band already known is marked used.
     */
    void bandSeen(int priority, long nowNanos) {
        cursors.compute(priority, (band, cursor) -> cursor == null
                ? new Cursor(Position.at(HEAD), generations.incrementAndGet(), nowNanos)
                : cursor.usedAt(nowNanos));
    }

    /**
     * Moves cursors after a claim under {@code plan} that asked for {@code limit} and leased the
     * items with these priorities, {@code available_at}s and keys, in claim order, at
     * {@code nowMicros} on the database clock.
     */
    void claimed(Plan plan, int limit, Integer[] priorities, Long[] availableMicros, String[] keys, long nowMicros,
            long nowNanos) {
        int n = priorities.length;
        Integer previous = null;
        for (Integer priority : priorities) {
            if (!priority.equals(previous)) {
                bandSeen(priority, nowNanos);
                previous = priority;
            }
        }
        if (plan.fromHead()) {
            return; // it read no cursor; the next look places them
        }
        Position exhausted = Position.at(nowMicros - SLACK_MICROS);
        // Claim order is priority first: every band above the one the limit stopped in was read to
        // its end, the bands below it not at all. Under the limit, every band read was.
        boolean stoppedByLimit = n > 0 && n >= limit;
        int stoppedIn = stoppedByLimit ? priorities[n - 1] : 0;
        for (int i = 0; i < plan.priorities().length; i++) {
            int band = plan.priorities()[i];
            if (stoppedByLimit && band < stoppedIn) {
                break; // the plan lists bands highest first: none after this one was read
            }
            // At the last item handed out, not past it: the next claim passes that one row again, and
            // nothing that shares its microsecond and sorts after it is skipped.
            Position to = stoppedByLimit && band == stoppedIn
                    ? Position.earlier(new Position(availableMicros[n - 1], keys[n - 1]), exhausted)
                    : exhausted;
            long generation = plan.generations()[i];
            cursors.computeIfPresent(band, (b, cursor) -> cursor.generation() == generation && cursor.from().before(to)
                    ? cursor.movedTo(to)
                    : cursor);
        }
    }

    /**
     * Places the cursors after a look, at {@code nowMicros} on the database clock, found the first
     * due item of each band in {@code priorities} at {@code firstDueMicros} with the key
     * {@code firstDueKeys}, and nothing due in any other band: a band found moves back to its first
     * due item if that lies behind the cursor (within its microsecond too),
     * under a new generation, and otherwise forward to it, but no further than the look's
     * {@code now()} less the slack; a band known but not found moves forward to that bound.
     *
     * @return how many bands the look opened: found behind their cursor, or not known before; only
     *         those hold anything claims reading from the cursors would not have handed out
     */
    int looked(Integer[] priorities, Long[] firstDueMicros, String[] firstDueKeys, long nowMicros, long nowNanos) {
        int opened = 0;
        Position exhausted = Position.at(nowMicros - SLACK_MICROS);
        Set<Integer> found = new HashSet<>();
        for (int i = 0; i < priorities.length; i++) {
            Position firstDue = new Position(firstDueMicros[i], firstDueKeys[i]);
            found.add(priorities[i]);
            boolean[] movedBack = {false};
            cursors.compute(priorities[i], (band, cursor) -> {
                movedBack[0] = cursor == null || firstDue.before(cursor.from());
                // Forward, never past the slack: what the look could not see yet may still land there.
                return movedBack[0]
                        ? new Cursor(firstDue, generations.incrementAndGet(), nowNanos)
                        : new Cursor(Position.later(cursor.from(), Position.earlier(firstDue, exhausted)),
                                cursor.generation(), nowNanos);
            });
            if (movedBack[0]) {
                opened++;
            }
        }
        for (Integer band : cursors.keySet()) {
            if (!found.contains(band)) {
                cursors.computeIfPresent(band, (b, cursor) -> cursor.from().before(exhausted)
                        ? cursor.movedTo(exhausted)
                        : cursor);
            }
        }
        looked = true;
        return opened;
    }

    /** Forgets the bands unused for {@link #IDLE_BAND_NANOS}, but the one used last; at most once a second. */
    private void forgetIdleBands(long nowNanos) {
        long last = lastForgetCheck.get();
        if (nowNanos - last < FORGET_CHECK_NANOS || !lastForgetCheck.compareAndSet(last, nowNanos)) {
            return;
        }
        Integer lastUsed = null;
        long lastUsedNanos = 0;
        for (Map.Entry<Integer, Cursor> band : cursors.entrySet()) {
            if (lastUsed == null || band.getValue().usedNanos() - lastUsedNanos > 0) {
                lastUsed = band.getKey();
                lastUsedNanos = band.getValue().usedNanos();
            }
        }
        for (Map.Entry<Integer, Cursor> band : cursors.entrySet()) {
            if (!band.getKey().equals(lastUsed) && nowNanos - band.getValue().usedNanos() > IDLE_BAND_NANOS) {
                cursors.remove(band.getKey(), band.getValue());
            }
        }
    }

    /** The current cursors' microseconds, highest priority first; for tests. */
    Map<Integer, Long> snapshot() {
        Map<Integer, Long> micros = new TreeMap<>(Collections.reverseOrder());
        cursors.forEach((band, cursor) -> micros.put(band, cursor.from().micros()));
        return micros;
    }

    /** The current cursors' positions, highest priority first; for tests. */
    Map<Integer, Position> positions() {
        Map<Integer, Position> positions = new TreeMap<>(Collections.reverseOrder());
        cursors.forEach((band, cursor) -> positions.put(band, cursor.from()));
        return positions;
    }

    /** Moves every cursor {@code micros} forward, as a database clock stepping back would leave them; for tests. */
    void shiftForTests(long micros) {
        cursors.replaceAll((band, cursor) -> cursor.movedTo(
                new Position(cursor.from().micros() + micros, cursor.from().key())));
    }
}
