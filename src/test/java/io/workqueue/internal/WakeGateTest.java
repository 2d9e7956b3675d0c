package io.workqueue.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.workqueue.ReactiveWorkQueue;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Sinks;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;
import org.junit.jupiter.api.extension.ExtendWith;
import io.workqueue.testing.ExpectedLogs;

/**
 * {@link WakeGate} on virtual time: the gate's timer is a {@link VirtualTimeScheduler} advanced by
 * hand, and the wakeup source a {@link Sinks.Many} the test emits into.
 */
@ExtendWith(ExpectedLogs.class)
class WakeGateTest {
    private static final Duration FLOOR = Duration.ofMillis(100);
    private static final Duration LONG_POLL = Duration.ofSeconds(10);

    private final VirtualTimeScheduler vts = VirtualTimeScheduler.create();
    private final Sinks.Many<Object> wakes = Sinks.many().multicast().directBestEffort();
    private final WakeGate gate = new WakeGate(wakes.asFlux(), FLOOR, vts);

    @AfterEach
    void disposeTimer() {
        vts.dispose();
    }

    private void advance(Duration by) {
        vts.advanceTimeBy(by);
    }

    private long nowMillis() {
        return vts.now(TimeUnit.MILLISECONDS);
    }

    private void wake() {
        assertEquals(Sinks.EmitResult.OK, wakes.tryEmitNext("wake"), "the gate should be subscribed to the source");
    }

    /** One wait, observed without blocking. */
    private final class Wait {
        volatile boolean done;
        volatile long completedAtMillis = -1;
        final Disposable subscription;

        Wait(Duration poll) {
            subscription = gate.await(poll).subscribe(null, e -> { throw new AssertionError(e); }, () -> {
                completedAtMillis = nowMillis();
                done = true;
            });
        }
    }

    private Wait await(Duration poll) {
        return new Wait(poll);
    }

    /** A worker that waits again as soon as a wait completes, recording when each completed. */
    private final class Rewaiter {
        final List<Long> completions = new ArrayList<>();
        private Disposable current;
        private boolean stopped;

        Rewaiter start() {
            current = gate.await(LONG_POLL).subscribe(null, e -> { throw new AssertionError(e); }, () -> {
                completions.add(nowMillis());
                if (!stopped) {
                    start();
                }
            });
            return this;
        }

        void stop() {
            stopped = true;
            current.dispose();
        }
    }

    // ---------------------------------------------------------------- no source

    @Test
    void withoutASourceAWaitIsAPlainDelayOfThePoll() {
        WakeGate plain = new WakeGate(null, FLOOR, vts);
        StepVerifier.withVirtualTime(() -> plain.await(Duration.ofSeconds(1)), () -> vts, Long.MAX_VALUE)
                .expectSubscription()
                .expectNoEvent(Duration.ofMillis(999))
                .thenAwait(Duration.ofMillis(1))
                .verifyComplete();
    }

    @Test
    void withoutASourceAWaitIsColdAndEachSubscriptionWaitsAfresh() {
        WakeGate plain = new WakeGate(null, FLOOR, vts);
        var wait = plain.await(Duration.ofMillis(300));
        advance(Duration.ofSeconds(5)); // nothing runs before subscription
        StepVerifier.withVirtualTime(() -> wait, () -> vts, Long.MAX_VALUE)
                .expectSubscription()
                .expectNoEvent(Duration.ofMillis(299))
                .thenAwait(Duration.ofMillis(1))
                .verifyComplete();
    }

    // ---------------------------------------------------------------- "forever"

    @Test
    void withoutASourceAForeverPollWaitsExactlyTheCap() {
        WakeGate plain = new WakeGate(null, FLOOR, vts);
        StepVerifier.withVirtualTime(() -> plain.await(Duration.ofSeconds(Long.MAX_VALUE, 999_999_999)),
                        () -> vts, Long.MAX_VALUE)
                .expectSubscription()
                .expectNoEvent(ReactiveWorkQueue.MAX_DURATION.minusNanos(1))
                .thenAwait(Duration.ofNanos(1))
                .verifyComplete();
    }

    @Test
    void aForeverPollStillEndsAtTheFirstWake() {
        StepVerifier.withVirtualTime(() -> gate.await(Duration.ofMillis(Long.MAX_VALUE)), () -> vts, Long.MAX_VALUE)
                .expectSubscription()
                .then(this::wake)
                .verifyComplete();
    }

    @Test
    void aForeverFloorLetsTheFirstWakeThroughAndHoldsLaterOnesPastThePoll() {
        WakeGate slow = new WakeGate(wakes.asFlux(), Duration.ofSeconds(Long.MAX_VALUE, 999_999_999), vts);
        AtomicInteger completed = new AtomicInteger();
        slow.await(LONG_POLL).subscribe(null, e -> { throw new AssertionError(e); }, completed::incrementAndGet);
        wake();
        assertEquals(1, completed.get(), "no floor has started before the first release");

        slow.await(LONG_POLL).subscribe(null, e -> { throw new AssertionError(e); }, completed::incrementAndGet);
        wake();
        advance(LONG_POLL.minusMillis(1));
        assertEquals(1, completed.get(), "a wake inside the floor is held");
        advance(Duration.ofMillis(1));
        assertEquals(2, completed.get(), "the poll ends the wait");
    }

    // ---------------------------------------------------------------- wakes

    @Test
    void aWakeCompletesAPendingWait() {
        StepVerifier.withVirtualTime(() -> gate.await(LONG_POLL), () -> vts, Long.MAX_VALUE)
                .expectSubscription()
                .expectNoEvent(Duration.ofSeconds(1))
                .then(this::wake)
                .verifyComplete();
        assertEquals(1_000, nowMillis());
    }

    @Test
    void withASourceButNoWakeTheWaitEndsWithItsPoll() {
        StepVerifier.withVirtualTime(() -> gate.await(Duration.ofMillis(700)), () -> vts, Long.MAX_VALUE)
                .expectSubscription()
                .expectNoEvent(Duration.ofMillis(699))
                .thenAwait(Duration.ofMillis(1))
                .verifyComplete();
    }

    @Test
    void oneWakeCompletesEveryWaitPendingAtThatMoment() {
        Wait a = await(LONG_POLL);
        Wait b = await(LONG_POLL);
        Wait c = await(Duration.ofSeconds(3));
        advance(Duration.ofSeconds(1));

        wake();

        assertTrue(a.done && b.done && c.done);
        assertEquals(List.of(1_000L, 1_000L, 1_000L), List.of(a.completedAtMillis, b.completedAtMillis, c.completedAtMillis));
    }

    @Test
    void aWakeWhileNobodyWaitsIsLatchedForTheNextWait() {
        Wait first = await(LONG_POLL); // subscribes the gate to the source
        wake();
        assertTrue(first.done);
        advance(Duration.ofSeconds(1)); // well past the floor

        wake(); // nobody waits
        advance(Duration.ofSeconds(1));
        Wait next = await(LONG_POLL);

        assertTrue(next.done, "the latched wake completes the next wait at once");
        assertEquals(2_000, next.completedAtMillis);
    }

    @Test
    void aLatchedWakeIsConsumedByOneWaitOnly() {
        Wait first = await(LONG_POLL);
        wake();
        advance(Duration.ofSeconds(1));
        wake();
        advance(Duration.ofSeconds(1));

        Wait consumer = await(LONG_POLL);
        Wait after = await(Duration.ofSeconds(2));
        assertTrue(first.done && consumer.done);
        assertFalse(after.done);
        advance(Duration.ofSeconds(2));
        assertTrue(after.done);
        assertEquals(4_000, after.completedAtMillis, "the second wait ran out its poll");
    }

    @Test
    void aWakeInsideTheFloorWhileNobodyWaitsIsHeldUntilTheFloorEnds() {
        Wait first = await(LONG_POLL);
        wake(); // released at t=0: the floor runs to t=100
        assertTrue(first.done);
        advance(Duration.ofMillis(10));
        wake(); // nobody waits, inside the floor
        advance(Duration.ofMillis(10));

        Wait next = await(LONG_POLL);
        assertFalse(next.done, "not before the floor ends");
        advance(Duration.ofMillis(79));
        assertFalse(next.done);
        advance(Duration.ofMillis(1));
        assertTrue(next.done);
        assertEquals(100, next.completedAtMillis);
    }

    @Test
    void aWakeInsideTheFloorWithAWaiterIsHeldNotDropped() {
        Wait first = await(LONG_POLL);
        wake();
        assertTrue(first.done);
        Wait second = await(LONG_POLL);
        advance(Duration.ofMillis(30));

        wake();
        assertFalse(second.done, "inside the floor");
        advance(Duration.ofMillis(69));
        assertFalse(second.done);
        advance(Duration.ofMillis(1));
        assertTrue(second.done, "released when the floor ends, long before the poll");
        assertEquals(100, second.completedAtMillis);
    }

    @Test
    void aBurstOfWakesCompletesAtMostTwoWaitsAndItsLastWakeIsNotLost() {
        Rewaiter worker = new Rewaiter().start();

        // 100 wakes within 50 ms, every half millisecond.
        for (int i = 0; i < 100; i++) {
            wake();
            advance(Duration.ofNanos(500_000));
        }
        assertEquals(50, nowMillis());
        assertEquals(List.of(0L), worker.completions, "the first wake completes the wait at once; the rest are held");

        advance(Duration.ofMillis(49));
        assertEquals(List.of(0L), worker.completions);
        advance(Duration.ofMillis(1));
        assertEquals(List.of(0L, 100L), worker.completions, "the held wake is released when the floor ends");

        advance(Duration.ofSeconds(5));
        assertEquals(List.of(0L, 100L), worker.completions, "the burst cost at most one extra release");
        worker.stop();
    }

    @Test
    void aSteadyStreamOfWakesCompletesWaitsOncePerFloor() {
        Rewaiter worker = new Rewaiter().start();

        for (int ms = 0; ms < 1_000; ms++) {
            wake();
            advance(Duration.ofMillis(1));
        }
        advance(Duration.ofMillis(1)); // the last wake, at 999 ms, is released at 1 000 ms

        assertEquals(List.of(0L, 100L, 200L, 300L, 400L, 500L, 600L, 700L, 800L, 900L, 1_000L), worker.completions);
        worker.stop();
    }

    @Test
    void aWakeAfterTheFloorCompletesAWaitAtOnce() {
        Rewaiter worker = new Rewaiter().start();
        wake();
        advance(Duration.ofMillis(150));
        wake();
        advance(Duration.ofMillis(300));
        wake();
        assertEquals(List.of(0L, 150L, 450L), worker.completions);
        worker.stop();
    }

    // ---------------------------------------------------------------- cancellation and polls

    @Test
    void aCancelledWaitIsWithdrawnAndDoesNotSwallowTheNextWake() {
        Wait cancelled = await(LONG_POLL);
        advance(Duration.ofMillis(500));
        cancelled.subscription.dispose();

        wake(); // must not be spent on the withdrawn wait
        advance(Duration.ofMillis(500));
        Wait next = await(LONG_POLL);

        assertFalse(cancelled.done);
        assertTrue(next.done, "the wake was latched for the next wait, not consumed by the cancelled one");
        advance(LONG_POLL);
        assertFalse(cancelled.done, "a cancelled wait never completes, not even by its poll");
    }

    @Test
    void aWaitEndedByItsPollDoesNotSwallowALaterWake() {
        Wait polled = await(Duration.ofMillis(200));
        advance(Duration.ofMillis(200));
        assertTrue(polled.done);

        wake();
        Wait next = await(LONG_POLL);
        assertTrue(next.done);
        assertEquals(200, next.completedAtMillis);
    }

    @Test
    void theSourceIsSubscribedOnceOnTheFirstWait() {
        AtomicInteger subscriptions = new AtomicInteger();
        Sinks.Many<Object> source = Sinks.many().multicast().directBestEffort();
        WakeGate counted = new WakeGate(Flux.from(source.asFlux()).doOnSubscribe(s -> subscriptions.incrementAndGet()), FLOOR, vts);

        var wait = counted.await(LONG_POLL);
        assertEquals(0, subscriptions.get(), "cold until a wait is subscribed");
        wait.subscribe();
        counted.await(LONG_POLL).subscribe();
        counted.await(LONG_POLL).subscribe().dispose();
        advance(LONG_POLL);
        counted.await(LONG_POLL).subscribe();

        assertEquals(1, subscriptions.get());
    }

    // ---------------------------------------------------------------- source termination

    @Test
    void whenTheSourceCompletesWaitsFallBackToTheirPoll() {
        Wait pending = await(Duration.ofSeconds(2));
        wakes.tryEmitComplete();

        advance(Duration.ofMillis(1_999));
        assertFalse(pending.done);
        advance(Duration.ofMillis(1));
        assertTrue(pending.done);

        StepVerifier.withVirtualTime(() -> gate.await(Duration.ofSeconds(1)), () -> vts, Long.MAX_VALUE)
                .expectSubscription()
                .expectNoEvent(Duration.ofMillis(999))
                .thenAwait(Duration.ofMillis(1))
                .verifyComplete();
    }

    @Test
    void whenTheSourceFailsWaitsFallBackToTheirPollAndNeverSeeTheError() {
        Wait pending = await(Duration.ofSeconds(2));
        wakes.tryEmitError(new IllegalStateException("listener connection lost"));

        advance(Duration.ofMillis(1_999));
        assertFalse(pending.done);
        advance(Duration.ofMillis(1));
        assertTrue(pending.done);

        StepVerifier.withVirtualTime(() -> gate.await(Duration.ofSeconds(1)), () -> vts, Long.MAX_VALUE)
                .expectSubscription()
                .expectNoEvent(Duration.ofMillis(999))
                .thenAwait(Duration.ofMillis(1))
                .verifyComplete();
    }
}
