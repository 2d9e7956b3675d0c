package io.workqueue.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.test.scheduler.VirtualTimeScheduler;
import org.junit.jupiter.api.extension.ExtendWith;
import io.workqueue.testing.ExpectedLogs;

/**
 * {@link Notifier} on virtual time, against a scripted database: what it sends, when, and how often
 * it asks about the transactions it awaits. The real statements are covered against PostgreSQL by
 * {@code TransactionalNotifyIT}.
 */
@ExtendWith(ExpectedLogs.class)
class NotifierTest {
    private static final Duration INTERVAL = Duration.ofMillis(100);

    private final VirtualTimeScheduler vts = VirtualTimeScheduler.create();
    private final Script db = new Script();
    private final List<Long> notified = new ArrayList<>();
    private final Notifier notifier = new Notifier("q", db, INTERVAL, vts, nanos -> notified.add(nanos));

    @AfterEach
    void disposeTimer() {
        vts.dispose();
    }

    /** A database whose transactions are whatever the test says; it records every statement. */
    private final class Script implements Notifier.Channel {
        final Map<String, String> status = new ConcurrentHashMap<>();
        final List<Long> notifications = new ArrayList<>();
        final List<Long> polls = new ArrayList<>();
        final AtomicBoolean failPolls = new AtomicBoolean();

        @Override
        public Mono<Notifier.Tick> tick(boolean notify, Collection<String> awaited) {
            return Mono.defer(() -> {
                long now = vts.now(TimeUnit.MILLISECONDS);
                polls.add(now);
                if (failPolls.get()) {
                    return Mono.error(new IllegalStateException("connection lost"));
                }
                Map<String, String> statuses = read(awaited);
                boolean notifies = notify || statuses.values().stream()
                        .anyMatch(s -> !Notifier.IN_PROGRESS.equals(s) && !Notifier.ABORTED.equals(s));
                if (notifies) {
                    notifications.add(now);
                }
                return Mono.just(new Notifier.Tick(notifies, statuses));
            });
        }

        private Map<String, String> read(Collection<String> awaited) {
            Map<String, String> read = new HashMap<>();
            awaited.forEach(xid -> read.put(xid, status.getOrDefault(xid, Notifier.IN_PROGRESS)));
            return read;
        }
    }

    private void advance(long millis) {
        vts.advanceTimeBy(Duration.ofMillis(millis));
    }

    @Test
    void aCommitAfterAQuietIntervalIsAnnouncedAtOnce() {
        advance(5);
        notifier.committed();
        assertEquals(List.of(5L), db.notifications);
        assertEquals(1, notified.size(), "the notifying commit is reported");
    }

    @Test
    void aBurstOfCommitsSendsOneNotificationNowAndOneAtTheEndOfTheInterval() {
        for (int i = 0; i < 50; i++) {
            notifier.committed();
            advance(1);
        }
        assertEquals(List.of(0L), db.notifications, "inside the interval, the later commits wait");
        advance(49);
        assertEquals(List.of(0L), db.notifications);
        advance(1);
        assertEquals(List.of(0L, 100L), db.notifications, "one trailing notification covers the rest");
        advance(1_000);
        assertEquals(2, db.notifications.size(), "nothing more without another commit");
    }

    @Test
    void aSteadyStreamOfCommitsSendsOneNotificationPerInterval() {
        for (int i = 0; i < 1_000; i++) {
            notifier.committed();
            advance(1);
        }
        advance(1_000);
        assertEquals(11, db.notifications.size(), "a second of commits, an interval of 100 ms, and the trailing one: "
                + db.notifications);
        for (int i = 1; i < db.notifications.size(); i++) {
            assertTrue(db.notifications.get(i) - db.notifications.get(i - 1) >= 100, db.notifications::toString);
        }
    }

    @Test
    void anAwaitedTransactionIsAnnouncedSoonAfterItCommitsAndNotBefore() {
        notifier.awaitCommit("42");
        advance(30);
        assertFalse(db.polls.isEmpty(), "asked about while it runs");
        assertEquals(List.of(), db.notifications, "still in progress: nothing is sent");
        db.status.put("42", Notifier.COMMITTED);
        long committedAt = vts.now(TimeUnit.MILLISECONDS);
        advance(10);
        assertEquals(1, db.notifications.size());
        long late = db.notifications.get(0) - committedAt;
        assertTrue(late <= Notifier.MIN_POLL_GAP.toMillis(), "found " + late + " ms after a commit 30 ms into the transaction");
        assertEquals(0, notifier.awaitedCount(), "forgotten once it has ended");
    }

    /**
     * Transactions enqueue back to back (one every quarter millisecond, each committing a
     * millisecond later), as a busy service's do: each is announced within the interval plus
     * {@link Notifier#MIN_POLL_GAP} of its commit, and the notifier runs at most one statement per
     * {@link Notifier#MIN_POLL_GAP}, however many arrive. (Pacing asks from the youngest hand-over
     * would put them off for as long as the stream lasts.)
     */
    @Test
    void aSteadyStreamOfTransactionsIsAnnouncedWithinABoundAtABoundedCost() {
        long stepNanos = 250_000;
        int transactions = 4_000; // a second of them
        Map<String, Long> committedAt = new HashMap<>();
        for (int i = 0; i < transactions; i++) {
            notifier.awaitCommit(Integer.toString(i));
            if (i >= 4) {
                String committing = Integer.toString(i - 4);
                db.status.put(committing, Notifier.COMMITTED);
                committedAt.put(committing, vts.now(TimeUnit.NANOSECONDS));
            }
            vts.advanceTimeBy(Duration.ofNanos(stepNanos));
        }
        long streamEnd = vts.now(TimeUnit.MILLISECONDS);
        assertFalse(db.notifications.isEmpty(), "announced while the stream still runs");
        for (int i = transactions - 4; i < transactions; i++) {
            db.status.put(Integer.toString(i), Notifier.COMMITTED);
            committedAt.put(Integer.toString(i), vts.now(TimeUnit.NANOSECONDS));
        }
        advance(1_000);
        long bound = INTERVAL.toMillis() + Notifier.MIN_POLL_GAP.toMillis();
        for (Map.Entry<String, Long> commit : committedAt.entrySet()) {
            long at = commit.getValue() / 1_000_000;
            long announced = db.notifications.stream().filter(n -> n >= at).findFirst().orElse(Long.MAX_VALUE);
            assertTrue(announced - at <= bound, "transaction " + commit.getKey() + " committed at " + at
                    + " ms, announced at " + announced + " ms: " + db.notifications);
        }
        assertTrue(db.polls.size() <= (streamEnd + bound) / Notifier.MIN_POLL_GAP.toMillis() + 1,
                db.polls.size() + " statements in " + streamEnd + " ms");
        assertEquals(0, notifier.awaitedCount());
    }

    @Test
    void anAbortedTransactionSendsNothing() {
        notifier.awaitCommit("7");
        advance(3);
        db.status.put("7", "aborted");
        advance(1_000);
        assertEquals(List.of(), db.notifications);
        assertEquals(0, notifier.awaitedCount());
    }

    @Test
    void aTransactionLeftOpenIsAskedAboutLessAndLessOften() {
        notifier.awaitCommit("9");
        advance(60_000);
        // An eighth of its age, at least MIN_POLL_GAP, at most 500 ms: a minute costs a few hundred reads.
        int polls = db.polls.size();
        assertTrue(polls > 100 && polls < 250, polls + " reads in a minute");
        long lastGap = db.polls.get(polls - 1) - db.polls.get(polls - 2);
        assertEquals(Notifier.MAX_POLL_GAP.toMillis(), lastGap);
        assertEquals(Notifier.MIN_POLL_GAP.toMillis(), db.polls.get(0), "the first read MIN_POLL_GAP after the hand-over");
    }

    @Test
    void nothingIsReadWhileANotificationIsAlreadyDue() {
        notifier.committed(); // sent at 0
        advance(1);
        notifier.committed(); // due at 100
        notifier.awaitCommit("5");
        advance(98);
        assertEquals(List.of(0L), db.polls, "nothing is read before the due notification, which covers whatever"
                + " commits before it");
        db.status.put("5", Notifier.COMMITTED);
        advance(1);
        assertEquals(List.of(0L, 100L), db.notifications);
        assertEquals(0, notifier.awaitedCount(), "the notification read it committed: it is covered");
        advance(1_000);
        assertEquals(2, db.notifications.size(), "not announced a second time");
    }

    @Test
    void aFailedReadForgetsTheTransactionsAwaited() {
        db.failPolls.set(true);
        notifier.awaitCommit("1");
        notifier.awaitCommit("2");
        advance(Notifier.MIN_POLL_GAP.toMillis());
        assertEquals(0, notifier.awaitedCount());
        int polls = db.polls.size();
        advance(1_000);
        assertEquals(polls, db.polls.size(), "not asked about again");
        assertEquals(List.of(), db.notifications);
    }

    @Test
    void closeSendsTheDueNotificationAtOnceAndNothingAfter() {
        notifier.committed();
        advance(1);
        notifier.committed();
        AtomicBoolean closed = new AtomicBoolean();
        notifier.close().subscribe(null, null, () -> closed.set(true));
        advance(0);
        assertTrue(closed.get());
        assertEquals(List.of(0L, 1L), db.notifications, "the due one did not wait for the interval");
        notifier.committed();
        notifier.awaitCommit("3");
        advance(1_000);
        assertEquals(2, db.notifications.size());
        assertEquals(db.notifications, db.polls, "no statement but the two notifications");
    }

    @Test
    void theAwaitedTransactionsAreBounded() {
        for (int i = 0; i < Notifier.MAX_AWAITED + 10; i++) {
            notifier.awaitCommit(Integer.toString(i));
        }
        assertEquals(Notifier.MAX_AWAITED, notifier.awaitedCount());
    }

    /**
     * The threads that hand writes over are the driver's event loops, so none may wait while
     * another thread works inside the notifier: starting a tick (taking a connection, writing its
     * statement) runs on whichever thread drives it. Measured with a lock around the state: in 20 s
     * of transactional enqueues, 283 waits of event-loop threads for the notifier's monitor, of up
     * to 3.5 ms each (docs/benchmarks/fleet/ANALYSIS.md). Here a tick's start is held up on one
     * thread, and a hand-over from another must return at once, and still be awaited.
     */
    @Test
    void aHandOverNeverWaitsForATickBeingStartedOnAnotherThread() throws Exception {
        CountDownLatch starting = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        Notifier.Channel heldAtStart = (notify, awaited) -> Mono.fromCallable(() -> {
            starting.countDown();
            release.await(10, TimeUnit.SECONDS);
            return new Notifier.Tick(notify, Map.of());
        });
        Notifier held = new Notifier("q", heldAtStart, INTERVAL, vts, nanos -> { });
        Thread driving = new Thread(held::committed, "driving");
        driving.start();
        assertTrue(starting.await(10, TimeUnit.SECONDS), "the tick started");
        CompletableFuture<Void> handOver = CompletableFuture.runAsync(() -> held.awaitCommit("7"));
        try {
            handOver.get(2, TimeUnit.SECONDS);
        } finally {
            release.countDown();
            driving.join(10_000);
        }
        assertEquals(1, held.awaitedCount(), "handed over, and awaited");
    }
}
