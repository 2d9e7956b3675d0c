package io.workqueue.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.r2dbc.spi.R2dbcNonTransientResourceException;
import io.workqueue.Item;
import io.workqueue.WorkerOptions;
import io.workqueue.WriteTimeoutException;
import io.workqueue.testing.Poll;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.function.IntFunction;
import java.util.function.Supplier;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscription;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Schedulers;
import reactor.netty.channel.AbortedException;
import reactor.test.scheduler.VirtualTimeScheduler;
import org.junit.jupiter.api.extension.ExtendWith;
import io.workqueue.testing.ExpectedLogs;

/**
 * {@link Worker} on virtual time against a {@link ScriptedQueue}: its back-off, buffering,
 * hostile-handler and cancel-mid-round paths, in isolation from any database.
 */
@ExtendWith(ExpectedLogs.class)
class WorkerTest {
    private final VirtualTimeScheduler vts = VirtualTimeScheduler.create();

    @AfterEach
    void disposeTimer() {
        vts.dispose();
    }

    private ScriptedQueue queue(String... keys) {
        return new ScriptedQueue(vts, List.of(keys));
    }

    private static List<String> keys(int n) {
        return IntStream.range(0, n).mapToObj(i -> String.format("k%03d", i)).toList();
    }

    /**
     * Handlers run in the loop (immediate), so that virtual time alone decides every step; the
     * worker's own pool, the default, has tests of its own below.
     */
    private static WorkerOptions.Builder options(int concurrency) {
        return WorkerOptions.builder().concurrency(concurrency).claimBatch(concurrency)
                .lease(Duration.ofMinutes(1)).poll(Duration.ofSeconds(1)).handlerScheduler(Schedulers.immediate());
    }

    /** A subscriber that records what it receives and requests only what the test asks for. */
    static final class Downstream extends BaseSubscriber<Item<String>> {
        final List<String> received = new CopyOnWriteArrayList<>();
        final AtomicReference<Throwable> error = new AtomicReference<>();
        final AtomicBoolean completed = new AtomicBoolean();
        private final long initial;

        Downstream(long initial) {
            this.initial = initial;
        }

        @Override
        protected void hookOnSubscribe(Subscription subscription) {
            if (initial > 0) {
                subscription.request(initial);
            }
        }

        @Override
        protected void hookOnNext(Item<String> item) {
            received.add(item.key());
        }

        @Override
        protected void hookOnError(Throwable throwable) {
            error.set(throwable);
        }

        @Override
        protected void hookOnComplete() {
            completed.set(true);
        }
    }

    private Downstream run(ScriptedQueue queue, Function<Item<String>, ? extends Publisher<?>> handler,
            WorkerOptions options, long request) {
        Downstream downstream = new Downstream(request);
        new Worker<>(queue, handler, options, vts).flux().subscribe(downstream);
        return downstream;
    }

    // ---------------------------------------------------------------- back-off functions

    static Stream<Arguments> brokenBackoffs() {
        return Stream.of(
                Arguments.of("throws on overflow", (IntFunction<Duration>) attempts ->
                        Duration.ofMinutes(1).multipliedBy(Long.MAX_VALUE)),
                Arguments.of("throws an Error", (IntFunction<Duration>) attempts -> {
                    throw new AssertionError("back-off bug");
                }),
                Arguments.of("returns null", (IntFunction<Duration>) attempts -> null));
    }

    @ParameterizedTest(name = "a back-off function that {0}")
    @MethodSource("brokenBackoffs")
    void aBrokenBackOffFallsBackToTheDefaultTheItemIsReleasedAndTheSlotFreed(String description,
            IntFunction<Duration> backoff) {
        ScriptedQueue queue = queue("bad", "good");
        IllegalStateException failure = new IllegalStateException("render failed");

        Downstream downstream = run(queue,
                item -> item.key().equals("bad") ? Mono.error(failure) : Mono.empty(),
                options(1).backoff(backoff).build(), Long.MAX_VALUE);
        vts.advanceTimeBy(Duration.ofSeconds(10));

        assertEquals(List.of(new ScriptedQueue.Release("bad", WorkerOptions.exponentialBackoff(1), failure)),
                queue.released);
        assertEquals(List.of("good"), downstream.received, "the slot was freed for the next item");
        assertNull(downstream.error.get());
        downstream.dispose();
    }

    // ---------------------------------------------------------------- buffering

    @Test
    void atMostConcurrencyCompletedItemsAreEverBuffered() {
        ScriptedQueue queue = queue(keys(50).toArray(String[]::new));

        Downstream downstream = run(queue, item -> Mono.empty(), options(4).build(), 1);
        vts.advanceTimeBy(Duration.ofMinutes(1));
        assertEquals(1, downstream.received.size());
        assertTrue(queue.completed.size() - downstream.received.size() <= 4,
                "completed " + queue.completed.size() + ", delivered " + downstream.received.size());
        assertTrue(queue.claimed.size() - downstream.received.size() <= 4,
                "leased " + queue.claimed.size() + ", delivered " + downstream.received.size());

        downstream.request(3);
        vts.advanceTimeBy(Duration.ofMinutes(1));
        assertEquals(4, downstream.received.size());
        assertTrue(queue.claimed.size() - downstream.received.size() <= 4,
                "leased " + queue.claimed.size() + ", delivered " + downstream.received.size());

        downstream.request(Long.MAX_VALUE);
        vts.advanceTimeBy(Duration.ofMinutes(1));
        assertEquals(keys(50), downstream.received, "everything, once, in claim order");
        downstream.dispose();
    }

    @Test
    void handlersThatFinishTogetherAreAcknowledgedByOneRound() {
        ScriptedQueue queue = queue(keys(20).toArray(String[]::new));

        Downstream downstream = run(queue, item -> Mono.empty(), options(10).build(), Long.MAX_VALUE);
        vts.advanceTimeBy(Duration.ofSeconds(1));

        assertEquals(keys(20), downstream.received);
        // Claim 10; acknowledge those 10 and claim 10; acknowledge the last 10 (and find nothing, then
        // poll): every round asks for a whole batch, none for the one slot a single handler freed.
        assertEquals(List.of(10, 10, 10), queue.claimLimits.subList(0, 3));
        assertTrue(queue.claimLimits.stream().allMatch(limit -> limit == 10),
                () -> "one round per batch, not one per handler: " + queue.claimLimits);
        downstream.dispose();
    }

    @Test
    void withoutDemandNothingIsClaimed() {
        ScriptedQueue queue = queue("a");
        Downstream downstream = run(queue, item -> Mono.empty(), options(4).build(), 0);
        vts.advanceTimeBy(Duration.ofMinutes(1));
        assertEquals(0, queue.rounds);
        downstream.dispose();
    }

    // ---------------------------------------------------------------- hostile handlers

    static Stream<Arguments> failingHandlers() {
        return Stream.of(
                Arguments.of("throws a RuntimeException", (Function<Item<String>, Publisher<?>>) item -> {
                    throw new IllegalStateException("bug");
                }),
                Arguments.of("throws an AssertionError", (Function<Item<String>, Publisher<?>>) item -> {
                    throw new AssertionError("bug");
                }),
                Arguments.of("throws a StackOverflowError", (Function<Item<String>, Publisher<?>>) item -> {
                    throw new StackOverflowError();
                }),
                Arguments.of("signals an AssertionError", (Function<Item<String>, Publisher<?>>) item ->
                        Mono.error(new AssertionError("bug"))),
                Arguments.of("throws an AssertionError inside its Mono", (Function<Item<String>, Publisher<?>>) item ->
                        Mono.fromRunnable(() -> {
                            throw new AssertionError("bug");
                        })),
                Arguments.of("throws a StackOverflowError inside its Mono", (Function<Item<String>, Publisher<?>>) item ->
                        Mono.fromRunnable(() -> {
                            throw new StackOverflowError();
                        })),
                Arguments.of("returns null", (Function<Item<String>, Publisher<?>>) item -> null));
    }

    @ParameterizedTest(name = "a handler that {0} fails only its own item")
    @MethodSource("failingHandlers")
    void aHandlerThatFailsInAnyNonFatalWayFailsOnlyItsOwnItem(String description,
            Function<Item<String>, Publisher<?>> failing) {
        ScriptedQueue queue = queue("a", "bad", "b", "c");

        Downstream downstream = run(queue,
                item -> item.key().equals("bad") ? failing.apply(item) : Mono.delay(Duration.ofMillis(10), vts),
                options(2).build(), Long.MAX_VALUE);
        vts.advanceTimeBy(Duration.ofSeconds(10));

        assertNull(downstream.error.get(), () -> "the stream ended: " + downstream.error.get());
        assertEquals(List.of("bad"), queue.released.stream().map(ScriptedQueue.Release::key).toList());
        assertEquals(List.of("a", "b", "c"), downstream.received.stream().sorted().toList());
        downstream.dispose();
    }

    @Test
    void aJvmFatalErrorEndsTheStreamWithThatErrorAndNeverHangs() {
        ScriptedQueue queue = queue("a", "b");
        OutOfMemoryError fatal = new OutOfMemoryError("simulated");

        Downstream downstream = run(queue, item -> {
            throw fatal;
        }, options(1).build(), Long.MAX_VALUE);
        vts.advanceTimeBy(Duration.ofSeconds(10));

        assertSame(fatal, downstream.error.get());
        assertEquals(List.of("a"), queue.claimed, "nothing claimed after the stream ended");
    }

    @Test
    void aHandlerThatOutlivesItsLeaseIsCancelledAndItsSlotFreed() {
        ScriptedQueue queue = queue("hangs", "next");
        AtomicBoolean cancelled = new AtomicBoolean();
        WorkerOptions options = options(1).lease(Duration.ofSeconds(10)).build();

        Downstream downstream = run(queue,
                item -> item.key().equals("hangs") ? Mono.never().doOnCancel(() -> cancelled.set(true)) : Mono.empty(),
                options, Long.MAX_VALUE);
        vts.advanceTimeBy(Duration.ofSeconds(9));
        assertEquals(List.of("hangs"), queue.claimed, "the slot is held while the lease lasts");

        vts.advanceTimeBy(Duration.ofSeconds(2));
        assertTrue(cancelled.get(), "the handler was cancelled when its lease ended");
        assertEquals(List.of("next"), downstream.received);
        assertFalse(queue.completed.contains("hangs"), "a lapsed item is not completed");
        assertTrue(queue.released.isEmpty(), "nor released: it may be someone else's now");
        downstream.dispose();
    }

    // ---------------------------------------------------------------- failed rounds

    @Test
    void aTimedOutAcknowledgementIsKeptAndRetriedAndTheStreamGoesOn() {
        ScriptedQueue queue = queue("a", "b");
        // Round 1 claims; round 2 (ack a + claim) times out; round 3 retries both.
        queue.roundFailures.add(null);
        queue.roundFailures.add(new WriteTimeoutException("did not commit in time", Duration.ofSeconds(1), null));
        WorkerOptions options = options(1).build();

        Downstream downstream = run(queue, item -> Mono.empty(), options, Long.MAX_VALUE);
        vts.advanceTimeBy(Duration.ofSeconds(30));

        assertNull(downstream.error.get(), () -> "the stream ended: " + downstream.error.get());
        assertEquals(List.of("a", "b"), downstream.received);
        assertEquals(List.of("a", "b"), queue.completed, "a acknowledged once, by the retry");
    }

    /**
     * A round on a half-open connection neither answers nor fails: once the lease has passed it is
     * abandoned (its connection closed) and its acknowledgements go out with the next round.
     */
    @Test
    void aRoundWithNoAnswerWithinTheLeaseIsAbandonedAndItsAcknowledgementsAreSentAgain() {
        ScriptedQueue queue = queue("a", "b");
        WorkerOptions options = options(1).build();
        Sinks.Empty<Void> aDone = Sinks.empty();

        Downstream downstream = run(queue, item -> item.key().equals("a") ? aDone.asMono() : Mono.empty(), options,
                Long.MAX_VALUE);
        queue.hangingRounds = 1; // round 2: acknowledge a, claim
        aDone.tryEmitEmpty();
        vts.advanceTimeBy(options.lease().minusMillis(1));
        assertEquals(List.of("a"), queue.claimed);
        assertEquals(2, queue.rounds, "waiting for round 2's answer");
        assertEquals(0, queue.abandoned);
        vts.advanceTimeBy(Duration.ofSeconds(1));

        assertEquals(1, queue.abandoned, "the unanswered round is given up at the lease");
        assertNull(downstream.error.get(), () -> "the stream ended: " + downstream.error.get());
        assertEquals(List.of("a", "b"), downstream.received);
        assertEquals(List.of("a", "b"), queue.completed, "a acknowledged by the round after the abandoned one");
    }

    @Test
    void afterCancellationATimedOutAcknowledgementIsStillRetried() {
        ScriptedQueue queue = queue("a");
        Sinks.Empty<Void> gate = Sinks.empty();

        Downstream downstream = run(queue, item -> gate.asMono(), options(1).build(), Long.MAX_VALUE);
        vts.advanceTimeBy(Duration.ofSeconds(1));
        assertEquals(List.of("a"), queue.claimed);
        downstream.dispose();
        queue.roundFailures.add(new WriteTimeoutException("did not commit in time", Duration.ofSeconds(1), null));
        gate.tryEmitEmpty();
        vts.advanceTimeBy(Duration.ofSeconds(30));

        assertEquals(2, queue.completeCalls, "the acknowledgement is tried again after its timeout");
        assertEquals(List.of("a"), queue.completed);
        assertEquals(List.of("a"), queue.claimed, "nothing claimed after cancellation");
    }

    @Test
    void transientRoundFailuresBackOffWithinBoundsAndTheStreamGoesOn() {
        ScriptedQueue queue = queue("a");
        for (int i = 0; i < 5; i++) {
            queue.roundFailures.add(new R2dbcNonTransientResourceException("connection closed", "08006"));
        }

        Downstream downstream = run(queue, item -> Mono.empty(), options(1).build(), Long.MAX_VALUE);
        vts.advanceTimeBy(Duration.ofMillis(50));
        assertEquals(1, queue.rounds, "no retry before the first back-off");
        // Five back-offs of at most 0.1 + 0.2 + 0.4 + 0.8 + 1.6 s.
        vts.advanceTimeBy(Duration.ofMillis(3_100));
        assertEquals(List.of("a"), downstream.received);
        assertNull(downstream.error.get());
        downstream.dispose();
    }

    @Test
    void aPermanentRoundFailureEndsTheStreamWithThatError() {
        ScriptedQueue queue = queue("a");
        queue.roundFailures.add(null);
        R2dbcNonTransientResourceException permanent = new R2dbcNonTransientResourceException("no such table", "42P01");
        queue.roundFailures.add(permanent);

        Downstream downstream = run(queue, item -> Mono.empty(), options(1).build(), Long.MAX_VALUE);
        vts.advanceTimeBy(Duration.ofSeconds(10));

        assertSame(permanent, downstream.error.get());
        assertEquals(2, queue.rounds, "nothing after the stream ended");
        assertTrue(queue.completed.isEmpty(), "the unacknowledged item is left to lapse");
    }

    @Test
    void aStreamThatEndsSaysWhyAtError() {
        ScriptedQueue queue = queue("a");
        R2dbcNonTransientResourceException permanent = new R2dbcNonTransientResourceException("no such table", "42P01");
        queue.roundFailures.add(permanent);

        AtomicReference<Downstream> downstream = new AtomicReference<>();
        downstream.set(run(queue, item -> Mono.empty(), options(1).build(), Long.MAX_VALUE));
        vts.advanceTimeBy(Duration.ofSeconds(10));
        String logged = ExpectedLogs.text();

        assertSame(permanent, downstream.get().error.get());
        assertTrue(logged.contains("ERROR " + ClaimLoop.class.getName()), logged);
        assertTrue(logged.contains("claim loop on queue scripted stopped"), logged);
        assertTrue(logged.contains(permanent.toString()), logged);
    }

    @Test
    void transientRoundFailuresOfAFailoverBackOffAndTheStreamGoesOn() {
        ScriptedQueue queue = queue(keys(3).toArray(String[]::new));
        // What a failover throws at a worker: a pool's dead idle connections, a send on a closed
        // connection, a promoted primary with no connection slot free yet.
        queue.roundFailures.add(new R2dbcNonTransientResourceException("Connection validation failed"));
        queue.roundFailures.add(AbortedException.beforeSend());
        queue.roundFailures.add(new R2dbcNonTransientResourceException("sorry, too many clients already", "53300"));

        Downstream downstream = run(queue, item -> Mono.empty(), options(1).build(), Long.MAX_VALUE);
        vts.advanceTimeBy(Duration.ofSeconds(30));

        assertNull(downstream.error.get());
        assertEquals(keys(3), downstream.received);
        downstream.dispose();
    }

    // ---------------------------------------------------------------- cancellation mid-round

    @Test
    void cancellingWhileARoundCarryingAcknowledgementsRunsReleasesWhatItLeased() {
        ScriptedQueue queue = queue("a", "b", "c");
        AtomicInteger handled = new AtomicInteger();

        queue.roundDelay = Duration.ofSeconds(5);

        Downstream downstream = run(queue, item -> Mono.fromRunnable(handled::incrementAndGet),
                options(1).build(), Long.MAX_VALUE);
        // Round 1 leases a by 5 s, its handler finishes at once, round 2 (ack a + claim) runs to 10 s.
        vts.advanceTimeBy(Duration.ofSeconds(6));
        assertEquals(List.of("a", "b"), queue.claimed, "round 2 is in flight");
        assertEquals(1, handled.get());
        downstream.dispose();
        vts.advanceTimeBy(Duration.ofSeconds(10));

        assertEquals(List.of("a"), queue.completed, "the acknowledgement went through");
        assertEquals(List.of(new ScriptedQueue.Release("b", Duration.ZERO, null)), queue.released,
                "what the round leased after cancellation is handed back at once");
        assertEquals(1, handled.get(), "and never handled");
    }

    @Test
    void cancellingDuringTheWaitForWorkStopsClaiming() {
        ScriptedQueue queue = queue("a");
        Downstream downstream = run(queue, item -> Mono.empty(), options(2).build(), Long.MAX_VALUE);
        vts.advanceTimeBy(Duration.ofMillis(1));
        int rounds = queue.rounds;
        downstream.dispose();
        queue.add(List.of("late"));
        vts.advanceTimeBy(Duration.ofMinutes(1));

        assertEquals(rounds, queue.rounds, "no round after cancellation: nothing left to acknowledge");
        assertFalse(queue.claimed.contains("late"));
    }

    // ---------------------------------------------------------------- graceful stop

    private Downstream runUntil(ScriptedQueue queue, Function<Item<String>, ? extends Publisher<?>> handler,
            WorkerOptions options, Publisher<?> stop) {
        Downstream downstream = new Downstream(Long.MAX_VALUE);
        new Worker<>(queue, handler, options, vts, stop).flux().subscribe(downstream);
        return downstream;
    }

    @Test
    void aGracefulStopLetsRunningHandlersFinishAcknowledgesThemAndOnlyThenCompletes() {
        ScriptedQueue queue = queue("a", "b", "c");
        Sinks.Empty<Void> gate = Sinks.empty();
        Sinks.Empty<Void> stop = Sinks.empty();

        Downstream downstream = runUntil(queue, item -> gate.asMono(), options(2).build(), stop.asMono());
        vts.advanceTimeBy(Duration.ofSeconds(1));
        assertEquals(List.of("a", "b"), queue.claimed);
        stop.tryEmitEmpty();
        vts.advanceTimeBy(Duration.ofSeconds(5));
        assertFalse(downstream.completed.get(), "two handlers still running");
        gate.tryEmitEmpty();
        vts.advanceTimeBy(Duration.ofSeconds(1));

        assertEquals(List.of("a", "b"), queue.completed, "both acknowledged");
        assertEquals(List.of("a", "b"), downstream.received, "and delivered before the stream completed");
        assertTrue(downstream.completed.get());
        assertNull(downstream.error.get());
        assertEquals(List.of("a", "b"), queue.claimed, "nothing claimed after the stop");
    }

    @Test
    void aGracefulStopReleasesAFailureBeforeCompleting() {
        ScriptedQueue queue = queue("a");
        Sinks.Empty<Void> gate = Sinks.empty();
        Sinks.Empty<Void> stop = Sinks.empty();
        IllegalStateException failure = new IllegalStateException("renderer on fire");

        Downstream downstream = runUntil(queue, item -> gate.asMono().then(Mono.error(failure)),
                options(1).backoff(attempts -> Duration.ofMinutes(1)).build(), stop.asMono());
        vts.advanceTimeBy(Duration.ofSeconds(1));
        stop.tryEmitEmpty();
        gate.tryEmitEmpty();
        vts.advanceTimeBy(Duration.ofSeconds(1));

        assertEquals(List.of(new ScriptedQueue.Release("a", Duration.ofMinutes(1), failure)), queue.released);
        assertTrue(downstream.completed.get());
        assertTrue(queue.completed.isEmpty());
    }

    @Test
    void aGracefulStopWhileARoundRunsHandsBackWhatItLeasedThenCompletes() {
        ScriptedQueue queue = queue("a", "b", "c");
        Sinks.Empty<Void> stop = Sinks.empty();
        queue.roundDelay = Duration.ofSeconds(5);

        Downstream downstream = runUntil(queue, item -> Mono.empty(), options(1).build(), stop.asMono());
        // Round 1 leases a by 5 s, its handler finishes at once, round 2 (ack a + claim b) runs to 10 s.
        vts.advanceTimeBy(Duration.ofSeconds(6));
        assertEquals(List.of("a", "b"), queue.claimed, "round 2 is in flight");
        stop.tryEmitEmpty();
        vts.advanceTimeBy(Duration.ofSeconds(1));
        assertFalse(downstream.completed.get(), "round 2 carries an acknowledgement: it runs to its end");
        vts.advanceTimeBy(Duration.ofSeconds(10));

        assertEquals(List.of("a"), queue.completed);
        assertEquals(List.of(new ScriptedQueue.Release("b", Duration.ZERO, null)), queue.released);
        assertEquals(List.of("a"), downstream.received);
        assertTrue(downstream.completed.get());
    }

    @Test
    void aGracefulStopWhileWaitingForWorkCompletesAtOnce() {
        ScriptedQueue queue = queue();
        Sinks.Empty<Void> stop = Sinks.empty();
        Downstream downstream = runUntil(queue, item -> Mono.empty(), options(2).build(), stop.asMono());
        vts.advanceTimeBy(Duration.ofMillis(1));
        int rounds = queue.rounds;

        stop.tryEmitEmpty();

        assertTrue(downstream.completed.get(), "no need to wait out the poll");
        queue.add(List.of("late"));
        vts.advanceTimeBy(Duration.ofMinutes(1));
        assertEquals(rounds, queue.rounds);
    }

    @Test
    void aGracefulStopDeliversAcknowledgedItemsOnlyAsDownstreamAsks() {
        ScriptedQueue queue = queue("a", "b");
        Sinks.Empty<Void> stop = Sinks.empty();
        Downstream downstream = new Downstream(1);
        new Worker<>(queue, item -> Mono.empty(), options(2).build(), vts, stop.asMono()).flux().subscribe(downstream);
        vts.advanceTimeBy(Duration.ofSeconds(1));
        stop.tryEmitEmpty();
        vts.advanceTimeBy(Duration.ofSeconds(1));
        assertEquals(List.of("a", "b"), queue.completed);
        assertEquals(1, downstream.received.size());
        assertFalse(downstream.completed.get(), "one acknowledged item still owed to downstream");

        downstream.request(1);

        assertEquals(List.of("a", "b"), downstream.received);
        assertTrue(downstream.completed.get());
    }

    // ---------------------------------------------------------------- where handlers run

    private static final Duration REAL_TIMEOUT = Duration.ofSeconds(30);

    /**
     * Waits in real time for {@code condition}, moving virtual time on by a millisecond at each
     * look, so that the worker's watchdog (on the virtual timer) gets to add runners.
     */
    private void untilAdvancing(String what, BooleanSupplier condition, Supplier<String> state) {
        Poll.until(REAL_TIMEOUT, what, () -> {
            vts.advanceTimeBy(Worker.HANDLER_PATIENCE);
            return condition.getAsBoolean();
        }, state);
    }

    /** A copy of one of the queue's records, taken under its lock: pool threads write them. */
    private static <T> T read(ScriptedQueue queue, Function<ScriptedQueue, T> what) {
        synchronized (queue) {
            return what.apply(queue);
        }
    }

    @Test
    void byDefaultHandlersRunOnAPoolOfTheWorkersOwnNamedForItsQueue() {
        ScriptedQueue queue = new ScriptedQueue(vts, "thumbnails", keys(8));
        Set<String> threads = ConcurrentHashMap.newKeySet();
        WorkerOptions options = WorkerOptions.builder().concurrency(4).lease(Duration.ofMinutes(1)).build();

        Downstream downstream = run(queue, item -> {
            threads.add(Thread.currentThread().getName());
            return Mono.empty();
        }, options, Long.MAX_VALUE);
        Poll.until(REAL_TIMEOUT, "all 8 items completed", () -> downstream.received.size() == 8);

        assertTrue(threads.stream().allMatch(name -> name.startsWith("workqueue-thumbnails-")), threads::toString);
        assertTrue(threads.size() <= 4, () -> "at most concurrency threads: " + threads);
        downstream.dispose();
    }

    @Test
    void aHandlerThatBlocksHoldsOnlyItsOwnSlot() {
        ScriptedQueue queue = new ScriptedQueue(vts, "blocking", keys(12));
        CountDownLatch release = new CountDownLatch(1);
        AtomicInteger blocked = new AtomicInteger();

        Downstream downstream = run(queue, item -> {
            if (item.key().equals("k000")) {
                blocked.incrementAndGet();
                awaitQuietly(release);
            }
            return Mono.empty();
        }, WorkerOptions.builder().concurrency(4).claimBatch(4).lease(Duration.ofMinutes(1)).build(), Long.MAX_VALUE);
        try {
            untilAdvancing("the other 11 items completed past the blocked one",
                    () -> downstream.received.size() == 11, () -> downstream.received.toString());
            assertEquals(1, blocked.get());
            assertFalse(downstream.received.contains("k000"));
        } finally {
            release.countDown();
        }
        Poll.until(REAL_TIMEOUT, "the blocked item completed once released", () -> downstream.received.contains("k000"));
        downstream.dispose();
    }

    @Test
    void aHandlerStillBlockingItsPoolThreadWhenItsLeaseEndsIsInterrupted() {
        ScriptedQueue queue = new ScriptedQueue(vts, "stuck", List.of("stuck", "next"));
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch interrupted = new CountDownLatch(1);

        Downstream downstream = run(queue, item -> {
            if (item.key().equals("stuck")) {
                started.countDown();
                try {
                    new CountDownLatch(1).await();
                } catch (InterruptedException e) {
                    interrupted.countDown();
                    Thread.currentThread().interrupt();
                }
            }
            return Mono.empty();
        }, WorkerOptions.builder().concurrency(1).lease(Duration.ofSeconds(10)).build(), Long.MAX_VALUE);
        awaitQuietly(started);
        vts.advanceTimeBy(Duration.ofSeconds(11));

        awaitQuietly(interrupted);
        Poll.until(REAL_TIMEOUT, "the freed slot took the next item", () -> downstream.received.equals(List.of("next")),
                () -> downstream.received.toString());
        assertEquals(List.of(), read(queue, q -> q.completed.stream().filter("stuck"::equals).toList()),
                "a lapsed item is not completed");
        assertEquals(List.of(), read(queue, q -> List.copyOf(q.released)), "nor released");
        downstream.dispose();
    }

    @Test
    void cancellingTheWorkerLetsHandlersOnItsPoolFinishAndAcknowledgesThem() {
        ScriptedQueue queue = new ScriptedQueue(vts, "cancelled", List.of("a", "b"));
        CountDownLatch release = new CountDownLatch(1);
        AtomicInteger running = new AtomicInteger();

        Downstream downstream = run(queue, item -> {
            running.incrementAndGet();
            awaitQuietly(release);
            return Mono.empty();
        }, WorkerOptions.builder().concurrency(2).lease(Duration.ofMinutes(1)).build(), Long.MAX_VALUE);
        untilAdvancing("both handlers running", () -> running.get() == 2, () -> running.get() + " running");
        downstream.dispose();
        release.countDown();

        Poll.until(REAL_TIMEOUT, "both acknowledged after the cancellation",
                () -> read(queue, q -> q.completed.containsAll(List.of("a", "b"))));
        Poll.until(REAL_TIMEOUT, "the worker's pool threads ended", () -> Thread.getAllStackTraces().keySet().stream()
                .noneMatch(thread -> thread.getName().startsWith("workqueue-cancelled-")));
    }

    @Test
    void aClaimsHandlerCallsCostOneHandOffEvenWhenTheWokenRunnerRunsBeforeTheLoopGoesOn() {
        // On a busy machine the runner a claim wakes often takes the core of the thread that woke
        // it: it makes the first call before the loop has handed over the second. Handed over one
        // by one, each call then found an idle pool and cost a hand-off of its own.
        ScriptedQueue queue = queue(keys(20).toArray(String[]::new));
        PreemptingThreads threads = new PreemptingThreads();

        Downstream downstream = run(queue, item -> Mono.empty(), options(10).handlerScheduler(threads).build(),
                Long.MAX_VALUE);
        vts.advanceTimeBy(Duration.ofSeconds(1));

        assertEquals(keys(20), downstream.received);
        assertEquals(List.of(10, 10), queue.claimLimits.subList(0, 2));
        assertEquals(2, threads.scheduled.get(), "one runner per claim of 10, not one per call");
        downstream.dispose();
    }

    /** Runs each task at once on the scheduling thread, as a runner that preempts its waker would; counts them. */
    private static final class PreemptingThreads implements reactor.core.scheduler.Scheduler {
        final AtomicInteger scheduled = new AtomicInteger();

        @Override
        public reactor.core.Disposable schedule(Runnable task) {
            scheduled.incrementAndGet();
            task.run();
            return reactor.core.Disposables.disposed();
        }

        @Override
        public Worker createWorker() {
            return Schedulers.immediate().createWorker();
        }
    }

    @Test
    void aHandlerHoldingTheDeliveringThreadIsNamedInAWarningAtMostOnceAMinute() {
        ScriptedQueue queue = queue("a", "b");
        Function<Item<String>, Publisher<?>> spinning = new Spinning(Duration.ofMillis(120));

        Downstream downstream = run(queue, spinning, options(1).build(), Long.MAX_VALUE);
        vts.advanceTimeBy(Duration.ofSeconds(1));
        assertEquals(List.of("a", "b"), downstream.received);
        vts.advanceTimeBy(Worker.HELD_THREAD_WARNING_INTERVAL);
        queue.add(List.of("c"));
        vts.advanceTimeBy(Duration.ofSeconds(2));
        assertEquals(List.of("a", "b", "c"), downstream.received);
        downstream.dispose();
        String log = ExpectedLogs.text();

        List<String> warnings = log.lines().filter(line -> line.contains("held non-blocking thread")
                && line.contains("WARN")).toList();
        assertEquals(2, warnings.size(), log);
        assertTrue(warnings.get(0).contains("handler Spinning[spin=PT0.12S] of queue scripted"), warnings.get(0));
        assertTrue(warnings.get(0).contains("on item a"), warnings.get(0));
        assertTrue(warnings.get(1).contains("on item c") && warnings.get(1).contains("1 more such calls since the last"
                + " warning"), warnings.get(1));
    }

    @Test
    void aQuickHandlerOnTheDeliveringThreadIsNotWarnedAbout() {
        ScriptedQueue queue = queue("a", "b");
        Downstream downstream = run(queue, item -> Mono.empty(), options(1).build(), Long.MAX_VALUE);
        vts.advanceTimeBy(Duration.ofSeconds(1));
        assertEquals(List.of("a", "b"), downstream.received);
        downstream.dispose();
        String log = ExpectedLogs.text();
        assertFalse(log.contains("held non-blocking thread"), log);
    }

    /** Holds its thread for {@code spin} without a blocking call, as CPU-bound work does. */
    private record Spinning(Duration spin) implements Function<Item<String>, Publisher<?>> {
        @Override
        public Publisher<?> apply(Item<String> item) {
            long end = System.nanoTime() + spin.toNanos();
            long spins = 0;
            while (System.nanoTime() - end < 0) {
                spins++;
            }
            return spins >= 0 ? Mono.empty() : Mono.never();
        }
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            if (!latch.await(REAL_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new AssertionError("waited " + REAL_TIMEOUT + " for a latch");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }
}
