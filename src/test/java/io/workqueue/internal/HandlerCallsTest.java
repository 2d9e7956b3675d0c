package io.workqueue.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.workqueue.testing.CountingScheduler;
import io.workqueue.testing.Poll;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * {@link HandlerCalls} on real threads with the watchdog on virtual time: quick calls share a
 * runner, stuck runners get help (and no more than the cap), stops cancel or interrupt.
 */
class HandlerCallsTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private static final Duration PATIENCE = Duration.ofMillis(1);

    private final VirtualTimeScheduler vts = VirtualTimeScheduler.create();
    private final Scheduler threads = Schedulers.newBoundedElastic(16, Integer.MAX_VALUE, "handler-calls-test");
    private final AtomicInteger startedAll = new AtomicInteger();
    private final List<Throwable> refusals = new CopyOnWriteArrayList<>();

    @AfterEach
    void dispose() {
        threads.dispose();
        vts.dispose();
    }

    private HandlerCalls<TestCall> calls(Scheduler on, int maxRunners) {
        return new HandlerCalls<>(on, maxRunners, vts, PATIENCE, startedAll::incrementAndGet,
                (call, error) -> refusals.add(error));
    }

    /** A call that records its thread and, if told to, blocks until released or interrupted. */
    private static final class TestCall extends HandlerCalls.Call {
        final String name;
        final CountDownLatch release;
        final CountDownLatch done = new CountDownLatch(1);
        final List<String> log;
        volatile String thread = "";
        volatile boolean interrupted;
        volatile boolean interruptedOnEntry;

        TestCall(String name, CountDownLatch release, List<String> log) {
            this.name = name;
            this.release = release;
            this.log = log;
        }

        @Override
        void call() {
            interruptedOnEntry = Thread.currentThread().isInterrupted();
            thread = Thread.currentThread().getName();
            log.add(name);
            try {
                release.await();
            } catch (InterruptedException e) {
                interrupted = true;
            } finally {
                done.countDown();
            }
        }
    }

    private static TestCall quick(String name, List<String> log) {
        return new TestCall(name, new CountDownLatch(0), log);
    }

    /** Waits in real time, moving the watchdog's virtual clock on by the patience at each look. */
    private void untilAdvancing(String what, BooleanSupplier condition) {
        Poll.until(TIMEOUT, what, () -> {
            vts.advanceTimeBy(PATIENCE);
            return condition.getAsBoolean();
        });
    }

    @Test
    void quickCallsShareOneRunnerInOrderAndSignalOnceAllHaveStarted() {
        HandlerCalls<TestCall> calls = calls(threads, 16);
        List<String> log = new CopyOnWriteArrayList<>();
        // The first call holds its runner until every call is queued (the watchdog, on virtual
        // time, is not moved here, so it adds none): then one runner makes them all.
        CountDownLatch queued = new CountDownLatch(1);
        List<TestCall> submitted = new ArrayList<>(List.of(new TestCall("c0", queued, log)));
        calls.submit(submitted.get(0));
        for (int i = 1; i < 100; i++) {
            TestCall call = quick("c" + i, log);
            submitted.add(call);
            calls.submit(call);
        }
        assertTrue(calls.handingOut(), "99 calls wait");
        assertEquals(0, startedAll.get());
        queued.countDown();

        Poll.until(TIMEOUT, "all 100 calls made", () -> log.size() == 100);
        assertEquals(submitted.stream().map(call -> call.name).toList(), log, "in order");
        assertEquals(1, submitted.stream().map(call -> call.thread).distinct().count(), "on one runner");
        Poll.until(TIMEOUT, "told that all had started", () -> startedAll.get() > 0);
        assertFalse(calls.handingOut());
    }

    @Test
    void callsStuckBehindABlockedOneGetRunnersOfTheirOwnUpToTheCap() {
        HandlerCalls<TestCall> calls = calls(threads, 4);
        List<String> log = new CopyOnWriteArrayList<>();
        CountDownLatch release = new CountDownLatch(1);
        List<TestCall> blocking = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            TestCall call = new TestCall("b" + i, release, log);
            blocking.add(call);
            calls.submit(call);
        }
        try {
            untilAdvancing("four blocking at once, the cap", () -> log.size() == 4);
            for (int i = 0; i < 20; i++) {
                vts.advanceTimeBy(PATIENCE);
            }
            assertEquals(4, log.size(), "never more runners than the cap");
            assertFalse(calls.handingOut(), "at the cap, the worker must not hold its rounds back");
        } finally {
            release.countDown();
        }
        Poll.until(TIMEOUT, "the last two made once runners were free", () -> log.size() == 6);
        assertEquals(4, blocking.stream().map(call -> call.thread).limit(4).distinct().count());
    }

    @Test
    void theWatchdogLooksOnlyWhenACallCanWaitBehindAnother() {
        AtomicInteger looksScheduled = new AtomicInteger();
        Scheduler countingTimer = new CountingScheduler(vts, looksScheduled);
        HandlerCalls<TestCall> calls = new HandlerCalls<>(threads, 16, countingTimer, PATIENCE,
                startedAll::incrementAndGet, (call, error) -> refusals.add(error));
        List<String> log = new CopyOnWriteArrayList<>();
        CountDownLatch release = new CountDownLatch(1);
        TestCall lone = new TestCall("lone", release, log);

        calls.submit(lone);
        Poll.until(TIMEOUT, "the lone call under way", () -> log.size() == 1);
        assertEquals(0, looksScheduled.get(), "a lone call for an idle pool waits behind nothing");

        calls.submit(quick("behind", log));
        assertEquals(1, looksScheduled.get(), "a call behind a busy runner is watched");
        untilAdvancing("the call behind the blocked one made on a runner of its own", () -> log.size() == 2);
        release.countDown();
        awaitDone(lone);

        Poll.until(TIMEOUT, "the runners idle again", () -> !calls.handingOut() && startedAll.get() > 0);
        vts.advanceTimeBy(PATIENCE.multipliedBy(3)); // the watchdog's last looks: nothing waits, it stops
        int before = looksScheduled.get();
        TestCall a = quick("a", log);
        TestCall b = quick("b", log);
        calls.submitAll(List.of(a, b));
        awaitDone(b);
        assertTrue(looksScheduled.get() > before, "the second call of a batch can wait behind the first");
    }

    @Test
    void aStopBeforeTheCallStartsCancelsIt() {
        // Room for a second runner, which only the watchdog (on virtual time, not moved here) would add.
        HandlerCalls<TestCall> calls = calls(threads, 2);
        List<String> log = new CopyOnWriteArrayList<>();
        CountDownLatch release = new CountDownLatch(1);
        TestCall first = new TestCall("first", release, log);
        TestCall second = quick("second", log);
        calls.submit(first);
        calls.submit(second);
        Poll.until(TIMEOUT, "the first call under way", () -> log.size() == 1);
        assertTrue(calls.handingOut(), "the second waits");

        calls.stop(second);

        assertFalse(calls.handingOut(), "a stopped call no longer waits");
        release.countDown();
        awaitDone(first);
        Poll.during(Duration.ofMillis(200), "the stopped call never made", () -> log.size() == 1);
    }

    @Test
    void aStopDuringTheCallInterruptsItAndTheRunnersNextCallStartsUninterrupted() {
        HandlerCalls<TestCall> calls = calls(threads, 1);
        List<String> log = new CopyOnWriteArrayList<>();
        TestCall stuck = new TestCall("stuck", new CountDownLatch(1), log);
        TestCall next = quick("next", log);
        calls.submit(stuck);
        calls.submit(next);
        Poll.until(TIMEOUT, "the stuck call under way", () -> log.size() == 1);

        calls.stop(stuck);

        awaitDone(stuck);
        assertTrue(stuck.interrupted);
        awaitDone(next);
        assertFalse(next.interruptedOnEntry, "the interrupt was for the stuck call only");
        assertEquals(stuck.thread, next.thread, "the same runner went on");
    }

    @Test
    void aStopAfterTheCallReturnedDoesNothing() {
        HandlerCalls<TestCall> calls = calls(threads, 1);
        List<String> log = new CopyOnWriteArrayList<>();
        TestCall done = quick("done", log);
        calls.submit(done);
        awaitDone(done);
        Poll.until(TIMEOUT, "the runner finished with it", () -> startedAll.get() > 0);

        calls.stop(done);

        TestCall after = quick("after", log);
        calls.submit(after);
        awaitDone(after);
        assertFalse(after.interruptedOnEntry);
    }

    @Test
    void callsNoRunnerCanMakeAreHandedToTheRefusalCallback() {
        Scheduler shutDown = Schedulers.newBoundedElastic(1, 1, "shut-down");
        shutDown.dispose();
        HandlerCalls<TestCall> calls = calls(shutDown, 4);
        List<String> log = new CopyOnWriteArrayList<>();

        calls.submit(quick("refused", log));

        assertEquals(1, refusals.size());
        assertTrue(refusals.get(0) instanceof RejectedExecutionException, refusals::toString);
        assertFalse(calls.handingOut());
        assertTrue(log.isEmpty());
    }

    private static void awaitDone(TestCall call) {
        try {
            assertTrue(call.done.await(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS), () -> call.name + " never returned");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
