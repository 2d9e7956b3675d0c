package io.workqueue.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.r2dbc.spi.R2dbcException;
import io.r2dbc.spi.R2dbcNonTransientResourceException;
import io.r2dbc.spi.R2dbcTransientResourceException;
import io.workqueue.WorkQueueException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntFunction;
import java.util.function.Supplier;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import reactor.core.Disposable;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.netty.channel.AbortedException;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;
import org.junit.jupiter.api.extension.ExtendWith;
import io.workqueue.testing.ExpectedLogs;

/**
 * {@link DemandPacedClaims} against a fake claim function that hands out consecutive integers and
 * records what it was asked for, a fake {@code awaitWork}, and a virtual-time back-off timer.
 */
@ExtendWith(ExpectedLogs.class)
class DemandPacedClaimsTest {
    private static final Duration MIN_BACKOFF = Duration.ofMillis(100);
    private static final Duration MAX_BACKOFF = Duration.ofSeconds(5);
    private static final Duration CLAIM_TIMEOUT = Duration.ofSeconds(30);

    private final VirtualTimeScheduler vts = VirtualTimeScheduler.create();
    /** Every claim's {@code want}, in order. */
    private final List<Integer> wants = new CopyOnWriteArrayList<>();
    /** Claims and waits, in the order the loop started them. */
    private final List<String> events = new CopyOnWriteArrayList<>();
    private final AtomicInteger nextItem = new AtomicInteger();
    private final AtomicInteger awaits = new AtomicInteger();

    @AfterEach
    void disposeTimer() {
        vts.dispose();
    }

    /** An R2dbcException that carries nothing but a SQLSTATE: classification must not need more. */
    static final class SqlStateException extends R2dbcException {
        private static final long serialVersionUID = 1L;

        SqlStateException(String sqlState) {
            super("failed with SQLSTATE " + sqlState, sqlState);
        }
    }

    private List<Integer> items(int count) {
        List<Integer> items = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            items.add(nextItem.getAndIncrement());
        }
        return items;
    }

    private static List<Integer> range(int from, int to) {
        return IntStream.range(from, to).boxed().toList();
    }

    /** A claim function that always finds as many items as it is asked for. */
    private IntFunction<Mono<List<Integer>>> plentiful() {
        return want -> Mono.fromCallable(() -> {
            wants.add(want);
            events.add("claim " + want);
            return items(want);
        });
    }

    /** A claim function that finds at most {@code available} items per claim. */
    private IntFunction<Mono<List<Integer>>> atMost(int available) {
        return want -> Mono.fromCallable(() -> {
            wants.add(want);
            events.add("claim " + want);
            return items(Math.min(want, available));
        });
    }

    /** A claim function that replays scripted outcomes, one per claim, then finds plenty. */
    private IntFunction<Mono<List<Integer>>> scripted(Deque<Throwable> failures) {
        return want -> Mono.defer(() -> {
            wants.add(want);
            events.add("claim " + want + " at " + vts.now(TimeUnit.MILLISECONDS));
            Throwable failure = failures.poll();
            return failure != null ? Mono.error(failure) : Mono.just(items(want));
        });
    }

    private Supplier<Mono<Void>> awaitImmediately() {
        return () -> Mono.fromRunnable(() -> {
            awaits.incrementAndGet();
            events.add("await");
        });
    }

    private Flux<Integer> claims(int maxBatch, IntFunction<Mono<List<Integer>>> claim, Supplier<Mono<Void>> awaitWork) {
        return new DemandPacedClaims<>("test-queue", maxBatch, claim, awaitWork, MIN_BACKOFF, MAX_BACKOFF, CLAIM_TIMEOUT,
                vts).flux();
    }

    // ---------------------------------------------------------------- pacing by demand

    @Test
    void nothingIsClaimedBeforeSubscriptionOrBeforeDemand() {
        Flux<Integer> flux = claims(500, plentiful(), awaitImmediately());
        assertEquals(List.of(), wants, "cold");

        StepVerifier.create(flux, 0)
                .expectSubscription()
                .then(() -> assertEquals(List.of(), wants, "no demand, no claim"))
                .thenCancel()
                .verify(Duration.ofSeconds(5));
        assertEquals(List.of(), wants);
    }

    @Test
    void eachClaimAsksForExactlyTheOutstandingDemand() {
        StepVerifier.create(claims(500, plentiful(), awaitImmediately()), 0)
                .thenRequest(3)
                .expectNext(0, 1, 2)
                .then(() -> assertEquals(List.of(3), wants))
                .thenRequest(2)
                .expectNext(3, 4)
                .then(() -> assertEquals(List.of(3, 2), wants))
                .thenRequest(1)
                .expectNext(5)
                .thenCancel()
                .verify(Duration.ofSeconds(5));
        assertEquals(List.of(3, 2, 1), wants);
        assertEquals(0, awaits.get(), "full batches never wait");
    }

    @Test
    void aClaimIsCappedAtTheMaximumBatch() {
        StepVerifier.create(claims(5, plentiful(), awaitImmediately()), 0)
                .thenRequest(12)
                .expectNextSequence(range(0, 12))
                .thenCancel()
                .verify(Duration.ofSeconds(5));
        assertEquals(List.of(5, 5, 2), wants);
    }

    @Test
    void atMostOneClaimIsInFlightAndDemandArrivingMeanwhileIsClaimedNext() {
        Deque<Sinks.One<List<Integer>>> pending = new ArrayDeque<>();
        IntFunction<Mono<List<Integer>>> held = want -> {
            wants.add(want);
            Sinks.One<List<Integer>> result = Sinks.one();
            pending.add(result);
            return result.asMono();
        };

        StepVerifier.create(claims(500, held, awaitImmediately()), 0)
                .thenRequest(3)
                .then(() -> assertEquals(List.of(3), wants))
                .thenRequest(4)
                .then(() -> assertEquals(List.of(3), wants, "no second claim while one is in flight"))
                .then(() -> pending.poll().tryEmitValue(range(0, 3)))
                .expectNext(0, 1, 2)
                .then(() -> assertEquals(List.of(3, 4), wants, "the next claim asks for what is still outstanding"))
                .then(() -> pending.poll().tryEmitValue(range(3, 7)))
                .expectNext(3, 4, 5, 6)
                .thenCancel()
                .verify(Duration.ofSeconds(5));
        assertEquals(List.of(3, 4), wants);
    }

    @Test
    void anUnboundedSubscriberIsServedInMaximumBatches() {
        StepVerifier.create(claims(100, plentiful(), awaitImmediately()).take(1_000, false))
                .expectNextCount(1_000)
                .verifyComplete();
        assertTrue(wants.stream().allMatch(w -> w == 100), wants::toString);
    }

    // ---------------------------------------------------------------- short batches

    @Test
    void afterAShortBatchItWaitsForWorkBeforeClaimingAgain() {
        Deque<Sinks.Empty<Void>> work = new ArrayDeque<>();
        Supplier<Mono<Void>> awaitWork = () -> {
            events.add("await");
            Sinks.Empty<Void> signal = Sinks.empty();
            work.add(signal);
            return signal.asMono();
        };

        StepVerifier.create(claims(500, atMost(2), awaitWork), 0)
                .thenRequest(5)
                .expectNext(0, 1)
                .then(() -> assertEquals(List.of("claim 5", "await"), events))
                .then(() -> work.poll().tryEmitEmpty())
                .expectNext(2, 3)
                .then(() -> assertEquals(List.of("claim 5", "await", "claim 3", "await"), events,
                        "after the wait it claims what is still outstanding"))
                .thenCancel()
                .verify(Duration.ofSeconds(5));
    }

    @Test
    void anEmptyBatchWaitsToo() {
        AtomicInteger claimsMade = new AtomicInteger();
        IntFunction<Mono<List<Integer>>> empty = want -> {
            claimsMade.incrementAndGet();
            wants.add(want);
            return Mono.just(List.of());
        };
        Sinks.Empty<Void> work = Sinks.empty();

        StepVerifier.create(claims(500, empty, () -> work.asMono()), 0)
                .thenRequest(10)
                .then(() -> assertEquals(1, claimsMade.get(), "a drained queue is not polled in a busy loop"))
                .thenCancel()
                .verify(Duration.ofSeconds(5));
        assertEquals(List.of(10), wants);
    }

    @Test
    void theWaitsItselfAreWhatPacesAnIdleStream() {
        // With a real (virtual-time) poll as the wait, an empty queue is claimed once per poll.
        IntFunction<Mono<List<Integer>>> empty = want -> {
            wants.add(want);
            return Mono.just(List.of());
        };
        Supplier<Mono<Void>> poll = () -> Mono.delay(Duration.ofSeconds(1), vts).then();

        Disposable stream = claims(500, empty, poll).subscribe();
        vts.advanceTimeBy(Duration.ofMillis(3_500));
        stream.dispose();

        assertEquals(4, wants.size(), "claims at 0, 1, 2 and 3 s: " + wants);
    }

    // ---------------------------------------------------------------- errors

    static Stream<Arguments> transientFailures() {
        return Stream.of(
                Arguments.of("transient resource exception", new R2dbcTransientResourceException("connection reset")),
                Arguments.of("deadlock 40P01", new SqlStateException("40P01")),
                Arguments.of("serialization failure 40001", new SqlStateException("40001")),
                // The driver reports a lost connection as a *non*-transient resource exception:
                // only the SQLSTATE says it is worth retrying.
                Arguments.of("connection lost 08006", new R2dbcNonTransientResourceException("connection closed", "08006")),
                Arguments.of("admin shutdown 57P01", new SqlStateException("57P01")),
                // What a pool validating by depth raises once the server has gone and left its idle
                // connections dead: no SQLSTATE at all.
                Arguments.of("pool validation failed", new R2dbcNonTransientResourceException("Connection validation failed")),
                Arguments.of("connection closed before a send", AbortedException.beforeSend()),
                Arguments.of("no connection slot 53300", new SqlStateException("53300")),
                Arguments.of("wrapped deadlock", new WorkQueueException("claim failed", new SqlStateException("40P01"))));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("transientFailures")
    void aTransientFailureIsRetriedAfterBackOffAndTheStreamContinues(String description, Throwable failure) {
        Deque<Throwable> script = new ArrayDeque<>(List.of(failure));

        StepVerifier.withVirtualTime(() -> claims(500, scripted(script), awaitImmediately()), () -> vts, 0)
                .thenRequest(3)
                .then(() -> assertEquals(List.of("claim 3 at 0"), events))
                .expectNoEvent(Duration.ofMillis(99))
                .then(() -> assertEquals(1, wants.size(), "not retried before the back-off"))
                .thenAwait(Duration.ofMillis(1))
                .expectNext(0, 1, 2)
                .then(() -> assertEquals(List.of("claim 3 at 0", "claim 3 at 100"), events))
                .thenRequest(2)
                .expectNext(3, 4)
                .thenCancel()
                .verify(Duration.ofSeconds(5));
    }

    @Test
    void backOffGrowsExponentiallyWithinItsBoundsAndResetsAfterASuccess() {
        Deque<Throwable> script = new ArrayDeque<>();
        for (int i = 0; i < 9; i++) {
            script.add(new SqlStateException("08006"));
        }
        List<Long> claimTimes = new CopyOnWriteArrayList<>();
        IntFunction<Mono<List<Integer>>> claim = want -> {
            claimTimes.add(vts.now(TimeUnit.MILLISECONDS));
            return scripted(script).apply(want);
        };
        BaseSubscriber<Integer> subscriber = new BaseSubscriber<>() {
            @Override
            protected void hookOnSubscribe(org.reactivestreams.Subscription subscription) {
                subscription.request(1);
            }
        };

        claims(500, claim, awaitImmediately()).subscribe(subscriber);
        vts.advanceTimeBy(Duration.ofMinutes(5));
        assertEquals(10, claimTimes.size(), "nine failures, then a success: " + claimTimes);

        for (int attempt = 1; attempt <= 9; attempt++) {
            long delay = claimTimes.get(attempt) - claimTimes.get(attempt - 1);
            long ceiling = Math.min(MAX_BACKOFF.toMillis(), MIN_BACKOFF.toMillis() << (attempt - 1));
            long floor = Math.max(MIN_BACKOFF.toMillis(), ceiling / 2);
            assertTrue(delay >= floor && delay <= ceiling,
                    "back-off " + attempt + " was " + delay + " ms, expected " + floor + ".." + ceiling);
        }

        // A success resets the back-off: the next failure waits the minimum again.
        script.add(new SqlStateException("40P01"));
        long before = vts.now(TimeUnit.MILLISECONDS);
        subscriber.request(1);
        vts.advanceTimeBy(Duration.ofSeconds(10));
        assertEquals(12, claimTimes.size(), claimTimes::toString);
        assertEquals(before, claimTimes.get(10));
        assertEquals(before + MIN_BACKOFF.toMillis(), claimTimes.get(11));
        subscriber.dispose();
    }

    /**
     * A claim on a half-open connection never answers and never fails: after the claim timeout it
     * is abandoned (cancelled, which closes its connection) and the loop claims again.
     */
    @Test
    void aClaimWithNoAnswerWithinTheClaimTimeoutIsAbandonedAndClaimedAgain() {
        AtomicBoolean firstCancelled = new AtomicBoolean();
        List<Long> claimTimes = new CopyOnWriteArrayList<>();
        IntFunction<Mono<List<Integer>>> claim = want -> Mono.defer(() -> {
            claimTimes.add(vts.now(TimeUnit.MILLISECONDS));
            return claimTimes.size() == 1
                    ? Mono.<List<Integer>>never().doOnCancel(() -> firstCancelled.set(true))
                    : Mono.just(items(want));
        });
        List<Integer> received = new CopyOnWriteArrayList<>();
        Disposable stream = claims(500, claim, awaitImmediately()).limitRate(2).take(2).subscribe(received::add);

        vts.advanceTimeBy(CLAIM_TIMEOUT.minusMillis(1));
        assertEquals(1, claimTimes.size(), "still waiting for the first claim's answer");
        assertFalse(firstCancelled.get());
        vts.advanceTimeBy(Duration.ofMillis(1).plus(MIN_BACKOFF));
        assertTrue(firstCancelled.get(), "the unanswered claim is abandoned at the timeout");
        assertEquals(2, claimTimes.size(), claimTimes::toString);
        assertEquals(CLAIM_TIMEOUT.plus(MIN_BACKOFF).toMillis(), claimTimes.get(1), "after the first back-off");
        assertEquals(List.of(0, 1), received);
        stream.dispose();
    }

    static Stream<Arguments> permanentFailures() {
        return Stream.of(
                Arguments.of("undefined table 42P01", new SqlStateException("42P01")),
                Arguments.of("syntax error 42601", new R2dbcNonTransientResourceException("syntax error", "42601")),
                Arguments.of("unique violation 23505", new SqlStateException("23505")),
                Arguments.of("statement timeout 57014", new SqlStateException("57014")),
                Arguments.of("not a database error", new IllegalStateException("bug")));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("permanentFailures")
    void aNonTransientFailureTerminatesTheStreamWithThatError(String description, Throwable failure) {
        Deque<Throwable> script = new ArrayDeque<>(List.of(failure));

        StepVerifier.withVirtualTime(() -> claims(500, scripted(script), awaitImmediately()), () -> vts, 0)
                .thenRequest(3)
                .expectErrorSatisfies(e -> assertSame(failure, e))
                .verify(Duration.ofSeconds(5));
        vts.advanceTimeBy(Duration.ofMinutes(1));
        assertEquals(1, wants.size(), "never claimed again");
    }

    @Test
    void aStreamThatEndsSaysWhyAtError() {
        SqlStateException failure = new SqlStateException("42P01");
        Deque<Throwable> script = new ArrayDeque<>(List.of(failure));
        StepVerifier.create(claims(500, scripted(script), awaitImmediately()), 0)
                .thenRequest(3)
                .expectErrorSatisfies(e -> assertSame(failure, e))
                .verify(Duration.ofSeconds(5));
        String logged = ExpectedLogs.text();

        assertTrue(logged.contains("ERROR " + ClaimLoop.class.getName()), logged);
        assertTrue(logged.contains("claim loop on queue test-queue stopped"), logged);
        assertTrue(logged.contains(failure.toString()), logged);
    }

    @Test
    void aFailingWaitThatIsNotTransientTerminatesTheStream() {
        IllegalStateException failure = new IllegalStateException("wakeup source broke");
        StepVerifier.create(claims(500, atMost(1), () -> Mono.error(failure)), 0)
                .thenRequest(5)
                .expectNext(0)
                .expectErrorSatisfies(e -> assertSame(failure, e))
                .verify(Duration.ofSeconds(5));
    }

    // ---------------------------------------------------------------- cancellation

    @Test
    void cancellingDisposesTheClaimInFlightAndStopsClaiming() {
        AtomicBoolean claimCancelled = new AtomicBoolean();
        IntFunction<Mono<List<Integer>>> never = want -> {
            wants.add(want);
            return Mono.<List<Integer>>never().doOnCancel(() -> claimCancelled.set(true));
        };

        StepVerifier.create(claims(500, never, awaitImmediately()), 0)
                .thenRequest(4)
                .then(() -> assertEquals(List.of(4), wants))
                .thenCancel()
                .verify(Duration.ofSeconds(5));

        assertTrue(claimCancelled.get(), "the in-flight claim was disposed");
        assertEquals(List.of(4), wants);
    }

    @Test
    void cancellingDuringAWaitDisposesTheWaitAndStopsClaiming() {
        AtomicBoolean waiting = new AtomicBoolean();
        AtomicBoolean waitCancelled = new AtomicBoolean();
        Supplier<Mono<Void>> awaitWork = () -> Mono.<Void>never()
                .doOnSubscribe(s -> waiting.set(true))
                .doOnCancel(() -> waitCancelled.set(true));
        List<Integer> received = new CopyOnWriteArrayList<>();
        BaseSubscriber<Integer> subscriber = new BaseSubscriber<>() {
            @Override
            protected void hookOnSubscribe(org.reactivestreams.Subscription subscription) {
                subscription.request(4);
            }

            @Override
            protected void hookOnNext(Integer item) {
                received.add(item);
            }
        };

        // The claim completes synchronously, so the short batch has started its wait by now.
        claims(500, atMost(1), awaitWork).subscribe(subscriber);
        assertEquals(List.of(0), received);
        assertTrue(waiting.get(), "waiting for work after the short batch");
        subscriber.dispose();

        assertTrue(waitCancelled.get(), "the wait was disposed");
        assertEquals(List.of(4), wants);
    }

    @Test
    void cancellingWhileTheShortBatchIsDeliveredStartsNoWait() {
        AtomicBoolean waiting = new AtomicBoolean();
        Supplier<Mono<Void>> awaitWork = () -> Mono.<Void>never().doOnSubscribe(s -> waiting.set(true));

        StepVerifier.create(claims(500, atMost(1), awaitWork), 0)
                .thenRequest(4)
                .expectNext(0)
                .thenCancel()
                .verify(Duration.ofSeconds(5));

        assertFalse(waiting.get(), "no wait begun for a cancelled stream");
        assertEquals(List.of(4), wants);
    }

    @Test
    void cancellingDuringBackOffStopsTheRetry() {
        Deque<Throwable> script = new ArrayDeque<>(List.of(new SqlStateException("40P01")));

        StepVerifier.withVirtualTime(() -> claims(500, scripted(script), awaitImmediately()), () -> vts, 0)
                .thenRequest(2)
                .expectNoEvent(Duration.ofMillis(50))
                .thenCancel()
                .verify(Duration.ofSeconds(5));
        vts.advanceTimeBy(Duration.ofMinutes(1));

        assertEquals(1, wants.size(), "no claim after cancellation: " + events);
    }

    @Test
    void eachSubscriptionRunsItsOwnLoop() {
        Flux<Integer> flux = claims(500, plentiful(), awaitImmediately());
        StepVerifier.create(flux.take(2, true)).expectNext(0, 1).verifyComplete();
        StepVerifier.create(flux.take(3, true)).expectNext(2, 3, 4).verifyComplete();
        assertEquals(List.of(2, 3), wants);
        assertFalse(events.contains("await"));
    }
}
