package io.workqueue.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import net.jqwik.api.AfterFailureMode;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.ShrinkingMode;
import net.jqwik.api.Tuple;
import net.jqwik.api.constraints.IntRange;
import reactor.core.publisher.Mono;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * {@link Notifier} on virtual time against a scripted database, over random histories: writes of
 * the instance committing, transactions handed over and ending (committed, rolled back, or
 * forgotten by the server), ticks that take a while or fail, the interval anywhere from a
 * millisecond to a second, and a close at any point. {@link NotifierTest} holds the hand-picked
 * cases; this holds the rules for every history:
 *
 * <ul>
 *   <li><b>one at a time</b>: no tick starts before the last one ended;
 *   <li><b>debounced</b>: no tick starts within the interval after one that notified, but the one a
 *       close sends at once;
 *   <li><b>paced</b>: a tick that only asks starts at least {@link Notifier#MIN_POLL_GAP} after the
 *       one before it;
 *   <li><b>no notification without a cause</b>: a tick carries the instance's own notification only
 *       if one of its writes committed since the tick before;
 *   <li><b>every committed write announced</b>: the first tick after a write commits carries its
 *       notification, within the interval and a tick's length; every transaction that committed is
 *       read as such by a tick that notified, within a bound; rolled back ones are never the cause
 *       of one. Waived only where the notifier documents a loss: a failed tick forgets what it
 *       carried, a close forgets the transactions it awaited;
 *   <li><b>close</b>: a notification due then goes out at once, the close completes after it, and
 *       no tick starts after that; an instance left quiet awaits nothing and runs no statement.
 * </ul>
 */
class NotifierPropertiesTest {
    /** The longest a scripted tick takes. */
    private static final long MAX_TICK_MILLIS = 30;

    /** One step of a history. */
    private sealed interface Step permits Commit, HandOver, End, Advance {}

    /** One of the instance's own writes commits. */
    private record Commit() implements Step {}

    /** A transactional enqueue in a transaction: a new one, or (again) one still open, the {@code pick}-th. */
    private record HandOver(boolean again, int pick) implements Step {}

    /** The {@code pick}-th open transaction ends, with this {@code pg_xact_status}. */
    private record End(int pick, String status) implements Step {}

    private record Advance(long millis) implements Step {}

    /** How one tick behaves: how long it takes, and whether it fails. */
    private record Behaviour(long millis, boolean fails) {
        /** From a number in [0, 1000): a tenth fail; 30 % answer at once, 50 % within 5 ms, the rest up to the longest. */
        static Behaviour of(int code) {
            int shape = code % 10;
            long millis = shape < 3 ? 0 : shape < 8 ? 1 + code / 10 % 5 : 5 + code / 10 % (MAX_TICK_MILLIS - 4);
            return new Behaviour(millis, code / 100 == 0);
        }
    }

    /**
     * Something the history did (one of the instance's writes committing, the close): where in
     * {@link #sequence}, and when.
     */
    private record Event(long seq, long millis) {}

    /** What one tick did, in the order of {@link #sequence}. */
    private static final class TickRecord {
        final long startSeq;
        final long startMillis;
        final boolean notify;
        final List<String> awaited;
        long endSeq = Long.MAX_VALUE;
        long readMillis = -1;
        boolean failed;
        boolean notified;
        Map<String, String> statuses = Map.of();

        TickRecord(long startSeq, long startMillis, boolean notify, List<String> awaited) {
            this.startSeq = startSeq;
            this.startMillis = startMillis;
            this.notify = notify;
            this.awaited = awaited;
        }

        @Override
        public String toString() {
            return "tick@" + startMillis + (notify ? "+notify" : "") + awaited + (failed ? " failed" : notified ? " notified" : "")
                    + " read@" + readMillis + statuses;
        }
    }

    private VirtualTimeScheduler vts;
    private long sequence;
    private final List<TickRecord> ticks = new ArrayList<>();
    /** The instance's own commits. */
    private final List<Event> commits = new ArrayList<>();
    /** Transactions still open, in hand-over order. */
    private final List<String> open = new ArrayList<>();
    private final Map<String, String> status = new HashMap<>();
    /** When each transaction ended, and how. */
    private final Map<String, Long> endedAt = new LinkedHashMap<>();

    // No shrinking, and after a failure the next run starts from the failing seed rather than a stored
    // sample: jqwik 1.9.3's shrinker put this property's steps into the behaviours' list (a
    // List<Integer> holding HandOver records), so every shrunk sample, and every stored one, failed
    // with a ClassCastException inside the scripted database instead of showing the real failure.
    // A failure reports the history as generated.
    @Property(tries = 300, shrinking = ShrinkingMode.OFF, afterFailure = AfterFailureMode.PREVIOUS_SEED)
    void everyHistoryKeepsTheRules(@ForAll("histories") List<Step> history, @ForAll("behaviours") List<Integer> behaviours,
            @ForAll("intervals") long intervalMillis, @ForAll @IntRange(min = -1, max = 60) int closeAfter) {
        // One instance may serve several tries: every try starts from nothing.
        vts = VirtualTimeScheduler.create();
        sequence = 0;
        ticks.clear();
        commits.clear();
        open.clear();
        status.clear();
        endedAt.clear();
        try {
            run(history, behaviours, Duration.ofMillis(intervalMillis), closeAfter);
        } finally {
            vts.dispose();
        }
    }

    private void run(List<Step> history, List<Integer> behaviours, Duration interval, int closeAfter) {
        int[] next = {0};
        Notifier.Channel db = (notify, awaited) -> {
            Behaviour behaviour = Behaviour.of(behaviours.get(next[0]++ % behaviours.size()));
            TickRecord tick = new TickRecord(++sequence, now(), notify, List.copyOf(awaited));
            ticks.add(tick);
            Mono<Long> after = behaviour.millis() == 0 ? Mono.just(0L) : Mono.delay(Duration.ofMillis(behaviour.millis()), vts);
            return after.flatMap(ignored -> {
                tick.endSeq = ++sequence;
                tick.readMillis = now();
                if (behaviour.fails()) {
                    tick.failed = true;
                    return Mono.error(new IllegalStateException("connection lost"));
                }
                Map<String, String> statuses = new HashMap<>();
                awaited.forEach(xid -> statuses.put(xid, status.getOrDefault(xid, Notifier.IN_PROGRESS)));
                // As the statement does: notified if asked to, or if it found a transaction that committed.
                tick.notified = notify || statuses.values().stream().anyMatch(s -> !Notifier.IN_PROGRESS.equals(s)
                        && !Notifier.ABORTED.equals(s));
                tick.statuses = statuses;
                return Mono.just(new Notifier.Tick(tick.notified, statuses));
            });
        };
        Notifier notifier = new Notifier("q", db, interval, vts, nanos -> { });
        AtomicBoolean closed = new AtomicBoolean();
        Event closing = null;
        int newXids = 0;
        for (int i = 0; i < history.size(); i++) {
            if (i == closeAfter) {
                closing = close(notifier, closed);
            }
            Step step = history.get(i);
            if (step instanceof Commit) {
                commits.add(new Event(++sequence, now()));
                notifier.committed();
            } else if (step instanceof HandOver h) {
                String xid = h.again() && !open.isEmpty() ? open.get(h.pick() % open.size()) : "x" + newXids++;
                if (!open.contains(xid)) {
                    open.add(xid);
                }
                notifier.awaitCommit(xid);
            } else if (step instanceof End e && !open.isEmpty()) {
                String xid = open.remove(e.pick() % open.size());
                status.put(xid, e.status());
                endedAt.put(xid, now());
            } else if (step instanceof Advance a) {
                vts.advanceTimeBy(Duration.ofMillis(a.millis()));
            }
        }
        // Every transaction ends, then a quiet while: whatever is owed goes out, and then nothing.
        for (String xid : List.copyOf(open)) {
            status.put(xid, Notifier.COMMITTED);
            endedAt.put(xid, now());
        }
        open.clear();
        long bound = Notifier.MAX_POLL_GAP.toMillis() + interval.toMillis() + 2 * MAX_TICK_MILLIS
                + Notifier.MIN_POLL_GAP.toMillis();
        vts.advanceTimeBy(Duration.ofMillis(bound + 10));
        long quietFrom = now();
        int ticksBeforeQuiet = ticks.size();
        vts.advanceTimeBy(Duration.ofSeconds(5));
        String story = "interval " + interval.toMillis() + " ms, close after step " + closeAfter + ", ticks " + ticks;
        if (closing == null) {
            assertEquals(ticksBeforeQuiet, ticks.size(), "a tick ran in the quiet after " + quietFrom + " ms: " + story);
            assertEquals(0, notifier.awaitedCount(), story);
            closing = close(notifier, closed);
        }
        long closeSeq = closing.seq();
        int ticksAtClose = (int) ticks.stream().filter(t -> t.startSeq < closeSeq).count();
        vts.advanceTimeBy(Duration.ofMillis(2 * MAX_TICK_MILLIS));
        assertTrue(closed.get(), "the close completed: " + story);
        int ticksAfterClose = ticks.size();
        notifier.committed();
        notifier.awaitCommit("after-close");
        vts.advanceTimeBy(Duration.ofSeconds(5));
        assertEquals(ticksAfterClose, ticks.size(), "a tick after the close completed: " + story);

        checkOneAtATime(story);
        checkDebouncedAndPaced(interval.toMillis(), closeSeq, story);
        checkCauses(story);
        checkCommitsAnnounced(interval.toMillis(), closeSeq, story);
        checkTransactionsAnnounced(bound, closeSeq, story);
        checkClose(ticksAtClose, closeSeq, closing.millis(), story);
    }

    /** Closes {@code notifier} now, {@code closed} set once the close completes. */
    private Event close(Notifier notifier, AtomicBoolean closed) {
        Event closing = new Event(++sequence, now());
        notifier.close().subscribe(null, e -> { throw new AssertionError(e); }, () -> closed.set(true));
        return closing;
    }

    private void checkOneAtATime(String story) {
        for (int i = 1; i < ticks.size(); i++) {
            assertTrue(ticks.get(i).startSeq > ticks.get(i - 1).endSeq, "tick " + i + " started before tick " + (i - 1)
                    + " ended: " + story);
        }
    }

    private void checkDebouncedAndPaced(long intervalMillis, long closeSeq, String story) {
        for (int i = 1; i < ticks.size(); i++) {
            TickRecord tick = ticks.get(i);
            if (tick.startSeq > closeSeq) {
                continue; // the close's own rule, below
            }
            for (TickRecord before : ticks.subList(0, i)) {
                if (before.notified && !before.failed) {
                    assertTrue(tick.startMillis - before.startMillis >= intervalMillis, "tick " + i + " at " + tick.startMillis
                            + " ms, within the interval of a notification at " + before.startMillis + " ms: " + story);
                }
            }
            if (!tick.notify) {
                assertTrue(tick.startMillis - ticks.get(i - 1).startMillis >= Notifier.MIN_POLL_GAP.toMillis(),
                        "tick " + i + " only asked, and came too soon after the one before: " + story);
            }
        }
    }

    private void checkCauses(String story) {
        for (int i = 0; i < ticks.size(); i++) {
            TickRecord tick = ticks.get(i);
            long after = i == 0 ? 0 : ticks.get(i - 1).startSeq;
            if (tick.notify) {
                assertTrue(commits.stream().anyMatch(c -> c.seq() > after && c.seq() < tick.startSeq),
                        "tick " + i + " carried a notification no commit asked for: " + story);
            }
            for (Map.Entry<String, String> read : tick.statuses.entrySet()) {
                assertTrue(tick.awaited.contains(read.getKey()), story);
            }
        }
    }

    /** The first tick to start after one of the instance's writes commits carries its notification. */
    private void checkCommitsAnnounced(long intervalMillis, long closeSeq, String story) {
        for (Event commit : commits) {
            if (commit.seq() > closeSeq) {
                continue;
            }
            TickRecord first = ticks.stream().filter(t -> t.startSeq > commit.seq()).findFirst().orElse(null);
            assertTrue(first != null, "a commit at " + commit.millis() + " ms was never announced: " + story);
            assertTrue(first.notify, "the first tick after a commit at " + commit.millis() + " ms did not carry it: " + story);
            assertTrue(first.startMillis - commit.millis() <= intervalMillis + MAX_TICK_MILLIS, "a commit at "
                    + commit.millis() + " ms waited until " + first.startMillis + " ms: " + story);
        }
    }

    /**
     * Each transaction that committed (or that the server forgot) is read as such by a tick that
     * notified, within {@code bound} of its end; unless a tick that asked about it failed, or the
     * close came first.
     */
    private void checkTransactionsAnnounced(long bound, long closeSeq, String story) {
        for (Map.Entry<String, Long> ended : endedAt.entrySet()) {
            String xid = ended.getKey();
            String how = status.get(xid);
            if (Notifier.ABORTED.equals(how)) {
                continue; // the causes check: a rolled back transaction alone makes no notification
            }
            boolean lost = ticks.stream().anyMatch(t -> t.failed && t.awaited.contains(xid));
            TickRecord announcing = ticks.stream().filter(t -> how.equals(t.statuses.get(xid)) && t.notified && !t.failed)
                    .findFirst().orElse(null);
            if (lost || announcing == null && closedBefore(xid, closeSeq)) {
                continue;
            }
            assertTrue(announcing != null, "transaction " + xid + " ended (" + how + ") at " + ended.getValue()
                    + " ms and was never announced: " + story);
            assertTrue(announcing.readMillis - ended.getValue() <= bound, "transaction " + xid + " ended at "
                    + ended.getValue() + " ms, announced by the tick read at " + announcing.readMillis + " ms: " + story);
        }
    }

    /** Whether the close came before {@code xid} was read as ended, so that the notifier let it go. */
    private boolean closedBefore(String xid, long closeSeq) {
        return ticks.stream().noneMatch(t -> t.startSeq < closeSeq && t.statuses.containsKey(xid)
                && !Notifier.IN_PROGRESS.equals(t.statuses.get(xid)));
    }

    /**
     * At most one tick after the close: the notification it found due, sent at once (when the close
     * came, or when the tick then running ended).
     */
    private void checkClose(int ticksAtClose, long closeSeq, long closeMillis, String story) {
        List<TickRecord> after = ticks.subList(ticksAtClose, ticks.size());
        assertTrue(after.size() <= 1, "ticks after the close: " + after + "; " + story);
        if (!after.isEmpty()) {
            TickRecord flush = after.get(0);
            assertTrue(flush.notify, "a tick after the close only asked: " + story);
            long runningEnded = ticksAtClose == 0 ? -1 : ticks.get(ticksAtClose - 1).readMillis;
            assertTrue(flush.startMillis == closeMillis || flush.startMillis == runningEnded,
                    "the close's notification waited until " + flush.startMillis + " ms: " + story);
        }
        boolean dueAtClose = commits.stream().anyMatch(c -> c.seq() < closeSeq
                && ticks.stream().noneMatch(t -> t.startSeq > c.seq() && t.startSeq < closeSeq));
        assertEquals(dueAtClose, !after.isEmpty(), "a notification was due at the close: " + dueAtClose + "; " + story);
    }

    private long now() {
        return vts.now(TimeUnit.MILLISECONDS);
    }

    @Provide
    Arbitrary<List<Step>> histories() {
        Arbitrary<Step> commit = Arbitraries.just(new Commit());
        Arbitrary<Step> handOver = Combinators.combine(Arbitraries.of(true, false, false), Arbitraries.integers().between(0, 20))
                .as(HandOver::new);
        Arbitrary<Step> end = Combinators.combine(Arbitraries.integers().between(0, 20),
                Arbitraries.of(Notifier.COMMITTED, Notifier.COMMITTED, Notifier.ABORTED, Notifier.UNKNOWN)).as(End::new);
        Arbitrary<Step> advance = Arbitraries.frequencyOf(
                Tuple.of(6, Arbitraries.longs().between(0, 10)),
                Tuple.of(3, Arbitraries.longs().between(10, 200)),
                Tuple.of(1, Arbitraries.longs().between(200, 3_000))).map(Advance::new);
        return Arbitraries.frequencyOf(
                Tuple.of(3, commit),
                Tuple.of(4, handOver),
                Tuple.of(3, end),
                Tuple.of(5, advance)).list().ofMinSize(1).ofMaxSize(60);
    }

    /** Each tick's behaviour, as a number {@link Behaviour#of} reads. */
    @Provide
    Arbitrary<List<Integer>> behaviours() {
        return Arbitraries.integers().between(0, 999).list().ofMinSize(1).ofMaxSize(12);
    }

    @Provide
    Arbitrary<Long> intervals() {
        return Arbitraries.of(1L, 5L, 10L, 100L, 1_000L);
    }
}
