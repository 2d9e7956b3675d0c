package io.workqueue.internal;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.workqueue.QueueClosedException;
import io.workqueue.WriteTimeoutException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;
import org.junit.jupiter.api.extension.ExtendWith;
import io.workqueue.testing.ExpectedLogs;

/** {@link GroupCommit} with a fake write function; timers on virtual time. */
@ExtendWith(ExpectedLogs.class)
class GroupCommitTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(10);

    private final VirtualTimeScheduler vts = VirtualTimeScheduler.create();

    /** A group commit whose writes have no per-caller result, as the enqueue's; batches unbounded. */
    private static GroupCommit<String, Void> enqueueLike(String name, Function<List<String>, Mono<Void>> write,
            Duration timeout, Scheduler timer) {
        return new GroupCommit<>(name, "enqueue", GroupCommit.withoutResults(write), payload -> 1, Integer.MAX_VALUE,
                timeout, timer, GroupCommit.WriteListener.NONE);
    }

    /**
     * A group commit whose payloads weigh their length, so that a test can say how big each is,
     * with at most {@code maxWeight} per write.
     */
    private static GroupCommit<String, Void> bounded(int maxWeight, Function<List<String>, Mono<Void>> write,
            Scheduler timer) {
        return new GroupCommit<>("q", "enqueue", GroupCommit.withoutResults(write), String::length, maxWeight,
                TIMEOUT, timer, GroupCommit.WriteListener.NONE);
    }

    /** A group commit with a result per caller, as the complete's; batches unbounded. */
    private static GroupCommit<String, Integer> completeLike(Function<List<String>, Mono<List<Integer>>> write,
            Scheduler timer) {
        return new GroupCommit<>("q", "complete", write, payload -> 1, Integer.MAX_VALUE, TIMEOUT, timer,
                GroupCommit.WriteListener.NONE);
    }

    @AfterEach
    void disposeTimer() {
        vts.dispose();
    }

    /**
     * A write function whose writes stay in flight until the test completes or fails them, one at
     * a time, in order. Records every batch it was handed.
     */
    private static final class HeldWrites implements Function<List<String>, Mono<Void>> {
        final List<List<String>> batches = Collections.synchronizedList(new ArrayList<>());
        final Deque<Sinks.Empty<Void>> inFlight = new ArrayDeque<>();
        final AtomicInteger cancelled = new AtomicInteger();

        @Override
        public synchronized Mono<Void> apply(List<String> payloads) {
            batches.add(List.copyOf(payloads));
            Sinks.Empty<Void> done = Sinks.empty();
            inFlight.add(done);
            return done.asMono().doOnCancel(cancelled::incrementAndGet);
        }

        synchronized void completeNext() {
            assertEquals(Sinks.EmitResult.OK, inFlight.poll().tryEmitEmpty());
        }

        synchronized void failNext(Throwable error) {
            assertEquals(Sinks.EmitResult.OK, inFlight.poll().tryEmitError(error));
        }
    }

    /** A caller's view of one submission. */
    private static final class Caller {
        volatile boolean completed;
        volatile Throwable error;
        final Disposable subscription;

        Caller(GroupCommit<String, Void> commit, String payload) {
            subscription = Mono.defer(() -> commit.submit(payload))
                    .subscribe(null, e -> error = e, () -> completed = true);
        }

        boolean waiting() {
            return !completed && error == null;
        }
    }

    // ---------------------------------------------------------------- batching

    @Test
    void anIdleCommitWritesAtOnceWithoutATimer() {
        List<List<String>> batches = new ArrayList<>();
        GroupCommit<String, Void> commit = enqueueLike("q", payloads -> Mono.fromRunnable(() -> batches.add(payloads)), TIMEOUT, vts);

        StepVerifier.create(Mono.defer(() -> commit.submit("a"))).verifyComplete();

        assertEquals(List.of(List.of("a")), batches);
    }

    @Test
    void submissionsAccumulateWhileAWriteIsInFlightAndRideTheNextOneTogether() {
        HeldWrites writes = new HeldWrites();
        GroupCommit<String, Void> commit = enqueueLike("q", writes, TIMEOUT, vts);

        Caller first = new Caller(commit, "first");
        List<Caller> riders = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            riders.add(new Caller(commit, "r" + i));
        }
        assertEquals(List.of(List.of("first")), writes.batches, "one write in flight; the rest wait");
        assertTrue(riders.stream().allMatch(Caller::waiting));

        writes.completeNext();

        assertTrue(first.completed);
        assertEquals(2, writes.batches.size());
        assertEquals(riders.size(), writes.batches.get(1).size(), "all hundred ride one write");
        assertEquals("r0", writes.batches.get(1).get(0));
        assertTrue(riders.stream().allMatch(Caller::waiting), "not complete before their own write");

        writes.completeNext();
        assertTrue(riders.stream().allMatch(c -> c.completed));
    }

    @Test
    void concurrentSubmittersAreAllWrittenExactlyOnceAndTheWriteNeverRunsConcurrently() throws Exception {
        int threads = 16;
        int perThread = 800;
        int total = threads * perThread;
        AtomicInteger inFlight = new AtomicInteger();
        AtomicInteger maxInFlight = new AtomicInteger();
        AtomicInteger writeCount = new AtomicInteger();
        Queue<String> written = new ConcurrentLinkedQueue<>();
        Set<String> committed = ConcurrentHashMap.newKeySet();
        Function<List<String>, Mono<Void>> write = payloads -> {
            maxInFlight.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
            writeCount.incrementAndGet();
            written.addAll(payloads);
            // Completes on another thread a little later, like a database round trip.
            return Mono.delay(Duration.ofMillis(1), Schedulers.parallel())
                    .doOnNext(tick -> committed.addAll(payloads))
                    .doOnTerminate(inFlight::decrementAndGet)
                    .then();
        };
        GroupCommit<String, Void> commit = enqueueLike("q", write, TIMEOUT, Schedulers.parallel());

        CountDownLatch done = new CountDownLatch(total);
        Queue<Throwable> errors = new ConcurrentLinkedQueue<>();
        Queue<String> completedBeforeCommit = new ConcurrentLinkedQueue<>();
        CyclicBarrier start = new CyclicBarrier(threads);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            for (int t = 0; t < threads; t++) {
                int thread = t;
                pool.execute(() -> {
                    try {
                        start.await(10, TimeUnit.SECONDS);
                    } catch (Exception e) {
                        errors.add(e);
                    }
                    for (int i = 0; i < perThread; i++) {
                        String payload = thread + ":" + i;
                        Mono.defer(() -> commit.submit(payload)).subscribe(null,
                                e -> {
                                    errors.add(e);
                                    done.countDown();
                                },
                                () -> {
                                    if (!committed.contains(payload)) {
                                        completedBeforeCommit.add(payload);
                                    }
                                    done.countDown();
                                });
                    }
                });
            }
            assertTrue(done.await(60, TimeUnit.SECONDS), "callers still waiting: " + done.getCount());
        } finally {
            pool.shutdownNow();
        }

        assertEquals(List.of(), List.copyOf(errors));
        assertEquals(List.of(), List.copyOf(completedBeforeCommit), "a caller completed before its write committed");
        assertEquals(total, written.size(), "every submission written once");
        assertEquals(total, new HashSet<>(written).size(), "none written twice, none lost");
        assertEquals(1, maxInFlight.get(), "the write function ran concurrently with itself");
        assertTrue(writeCount.get() <= total / 10,
                "submissions should accumulate while a write is in flight: " + writeCount.get() + " writes for " + total);
    }

    // ---------------------------------------------------------------- cancellation and failure

    @Test
    void aCallerCancellingStopsWaitingButDoesNotCancelTheWrite() {
        HeldWrites writes = new HeldWrites();
        GroupCommit<String, Void> commit = enqueueLike("q", writes, TIMEOUT, vts);

        Caller onlyCaller = new Caller(commit, "a");
        onlyCaller.subscription.dispose();

        assertEquals(0, writes.cancelled.get(), "the shared write is not the caller's to cancel");
        writes.completeNext();
        assertEquals(List.of(List.of("a")), writes.batches);
        assertFalse(onlyCaller.completed, "a cancelled caller hears nothing more");
    }

    @Test
    void aCallerCancellingDoesNotAffectTheOthersInItsBatch() {
        HeldWrites writes = new HeldWrites();
        GroupCommit<String, Void> commit = enqueueLike("q", writes, TIMEOUT, vts);
        Caller blocker = new Caller(commit, "blocker");
        Caller leaving = new Caller(commit, "leaving");
        Caller staying = new Caller(commit, "staying");
        leaving.subscription.dispose();

        writes.completeNext();
        assertEquals(List.of("leaving", "staying"), writes.batches.get(1), "a cancelled submission is still written");
        writes.completeNext();

        assertTrue(blocker.completed && staying.completed);
        assertEquals(0, writes.cancelled.get());
    }

    @Test
    void aFailingWriteFailsOnlyTheCallersOfItsOwnBatch() {
        HeldWrites writes = new HeldWrites();
        GroupCommit<String, Void> commit = enqueueLike("q", writes, TIMEOUT, vts);
        RuntimeException failure = new RuntimeException("unique violation");

        Caller a = new Caller(commit, "a");          // batch 1
        Caller b = new Caller(commit, "b");          // batch 2
        Caller c = new Caller(commit, "c");          // batch 2
        writes.completeNext();
        Caller d = new Caller(commit, "d");          // batch 3, arrives while batch 2 is in flight
        writes.failNext(failure);
        writes.completeNext();

        assertEquals(List.of(List.of("a"), List.of("b", "c"), List.of("d")), writes.batches);
        assertTrue(a.completed);
        assertSame(failure, b.error);
        assertSame(failure, c.error);
        assertTrue(d.completed, "the batch after a failure is written normally");
    }

    @Test
    void aWriteFunctionThatThrowsFailsItsBatchAndTheCommitCarriesOn() {
        AtomicInteger calls = new AtomicInteger();
        IllegalStateException thrown = new IllegalStateException("thrown, not signalled");
        GroupCommit<String, Void> commit = enqueueLike("q", payloads -> {
            if (calls.incrementAndGet() == 1) {
                throw thrown;
            }
            return Mono.empty();
        }, TIMEOUT, vts);

        StepVerifier.create(Mono.defer(() -> commit.submit("a"))).expectErrorSatisfies(e -> assertSame(thrown, e)).verify(TIMEOUT);
        StepVerifier.create(Mono.defer(() -> commit.submit("b"))).verifyComplete();
    }

    @Test
    void aWriteThatOutlivesItsTimeoutFailsItsBatchWithAWriteTimeoutException() {
        HeldWrites writes = new HeldWrites();
        GroupCommit<String, Void> commit = enqueueLike("emails", writes, Duration.ofSeconds(10), vts);

        Caller a = new Caller(commit, "a");
        Caller b = new Caller(commit, "b"); // waits behind the stuck write
        vts.advanceTimeBy(Duration.ofMillis(9_999));
        assertTrue(a.waiting());
        vts.advanceTimeBy(Duration.ofMillis(1));

        WriteTimeoutException error = assertInstanceOf(WriteTimeoutException.class, a.error);
        assertEquals(Duration.ofSeconds(10), error.timeout());
        assertTrue(error.getMessage().contains("emails"), error.getMessage());
        assertEquals(1, writes.cancelled.get(), "the timed-out write is abandoned");

        // The commit is not stuck: the next batch was written as soon as the first gave up.
        assertEquals(List.of(List.of("a"), List.of("b")), writes.batches);
        writes.inFlight.poll(); // the abandoned write's signal
        writes.completeNext();
        assertTrue(b.completed);
    }

    @Test
    void aTimeoutExceptionTheWriteItselfSignalsIsAFailureNotAWriteTimeout() {
        TimeoutException own = new TimeoutException("the write's own deadline");
        List<WriteOutcome> outcomes = new ArrayList<>();
        GroupCommit<String, Void> commit = new GroupCommit<>("q", "enqueue",
                GroupCommit.withoutResults(payloads -> Mono.error(own)), payload -> 1, Integer.MAX_VALUE, TIMEOUT, vts,
                (outcome, nanos) -> outcomes.add(outcome));

        StepVerifier.create(Mono.defer(() -> commit.submit("a"))).expectErrorSatisfies(e -> assertSame(own, e)).verify(TIMEOUT);
        assertEquals(List.of(WriteOutcome.FAILURE), outcomes);
    }

    @Test
    void theListenerHearsHowEveryWriteEndedButNothingOfABatchOfFlushMarkersAlone() {
        HeldWrites writes = new HeldWrites();
        List<WriteOutcome> outcomes = Collections.synchronizedList(new ArrayList<>());
        GroupCommit<String, Void> commit = new GroupCommit<>("q", "enqueue", GroupCommit.withoutResults(writes),
                payload -> 1, Integer.MAX_VALUE, TIMEOUT, vts, (outcome, nanos) -> {
                    assertTrue(nanos >= 0);
                    outcomes.add(outcome);
                });

        new Caller(commit, "ok");
        writes.completeNext();
        new Caller(commit, "fails");
        writes.failNext(new RuntimeException("refused"));
        new Caller(commit, "stuck");
        vts.advanceTimeBy(TIMEOUT);
        StepVerifier.create(commit.flush()).verifyComplete();

        assertEquals(List.of(WriteOutcome.SUCCESS, WriteOutcome.FAILURE, WriteOutcome.TIMEOUT), outcomes);
    }

    // ---------------------------------------------------------------- callers' own code

    /** A caller whose error handler rethrows, as {@code subscribe(v -> {}, e -> { throw ... })} does. */
    private static Disposable rethrowingCaller(GroupCommit<String, Void> commit, String payload, AtomicInteger heard) {
        return Mono.defer(() -> commit.submit(payload)).subscribe(null, e -> {
            heard.incrementAndGet();
            throw new IllegalStateException("the caller's own handler", e);
        });
    }

    @Test
    void aCallerWhoseErrorHandlerThrowsNeitherSilencesTheRestOfItsBatchNorStopsTheNextWrite() {
        HeldWrites writes = new HeldWrites();
        GroupCommit<String, Void> commit = enqueueLike("q", writes, TIMEOUT, vts);
        RuntimeException failure = new RuntimeException("lock timeout");
        Caller blocker = new Caller(commit, "blocker");
        Caller before = new Caller(commit, "before");
        AtomicInteger heard = new AtomicInteger();
        rethrowingCaller(commit, "thrower", heard);
        Caller after = new Caller(commit, "after");
        writes.completeNext();
        assertTrue(blocker.completed);

        assertDoesNotThrow(() -> writes.failNext(failure), "a caller's throw must not reach the write's thread");

        assertEquals(1, heard.get());
        assertSame(failure, before.error);
        assertSame(failure, after.error, "told although a caller ahead of it in the batch threw");
        Caller later = new Caller(commit, "later");
        assertEquals(List.of("later"), writes.batches.get(2), "the next write starts");
        writes.completeNext();
        assertTrue(later.completed);
        StepVerifier.create(commit.close()).verifyComplete();
    }

    @Test
    void aJvmFatalErrorThrownDownACallersChainDoesNotWedgeTheCommit() {
        HeldWrites writes = new HeldWrites();
        GroupCommit<String, Void> commit = enqueueLike("q", writes, TIMEOUT, vts);
        Caller blocker = new Caller(commit, "blocker");
        // An operator in the caller's chain rethrows a VirtualMachineError rather than signal it.
        AtomicBoolean thrown = new AtomicBoolean();
        Mono.defer(() -> commit.submit("fatal"))
                .doOnSuccess(ignored -> {
                    thrown.set(true);
                    throw new InternalError("thrown down the caller's chain");
                })
                .subscribe(null, e -> {});
        Caller sameBatch = new Caller(commit, "same-batch");
        writes.completeNext();

        assertDoesNotThrow(writes::completeNext);

        assertTrue(thrown.get());
        assertTrue(blocker.completed);
        assertTrue(sameBatch.completed);
        Caller later = new Caller(commit, "later");
        writes.completeNext();
        assertTrue(later.completed);
        StepVerifier.create(commit.close()).verifyComplete();
    }

    // ---------------------------------------------------------------- bounded writes

    @Test
    void aBacklogIsWrittenInOrderInWritesOfAtMostTheBoundAndAHeavySubmissionGoesAloneUnsplit() {
        HeldWrites writes = new HeldWrites();
        GroupCommit<String, Void> commit = bounded(3, writes, vts);
        Caller blocker = new Caller(commit, "x");
        List<Caller> backlog = new ArrayList<>();
        for (String payload : List.of("a", "bb", "c", "dddd", "e", "ff", "g")) {
            backlog.add(new Caller(commit, payload));
        }

        for (int i = 0; i < 5; i++) {
            writes.completeNext();
        }

        assertEquals(List.of(List.of("x"), List.of("a", "bb"), List.of("c"), List.of("dddd"), List.of("e", "ff"),
                List.of("g")), writes.batches);
        assertTrue(blocker.completed);
        assertTrue(backlog.subList(0, 6).stream().allMatch(c -> c.completed));
        assertTrue(backlog.get(6).waiting(), "the last write is still in flight");
        writes.completeNext();
        assertTrue(backlog.get(6).completed);
    }

    @Test
    void aHeavySubmissionAtTheFrontIsWrittenWholeAndAlone() {
        HeldWrites writes = new HeldWrites();
        GroupCommit<String, Void> commit = bounded(2, writes, vts);
        new Caller(commit, "x");
        new Caller(commit, "heavy");
        new Caller(commit, "y");
        writes.completeNext();
        writes.completeNext();
        assertEquals(List.of(List.of("x"), List.of("heavy"), List.of("y")), writes.batches);
    }

    @Test
    void aFlushMarkerInABacklogCompletesWithTheWriteOfTheLastSubmissionBeforeIt() {
        HeldWrites writes = new HeldWrites();
        GroupCommit<String, Void> commit = bounded(2, writes, vts);
        new Caller(commit, "x");
        new Caller(commit, "a");
        new Caller(commit, "b");
        new Caller(commit, "c");
        AtomicBoolean flushed = new AtomicBoolean();
        commit.flush().subscribe(null, null, () -> flushed.set(true));
        new Caller(commit, "d");
        new Caller(commit, "e");
        AtomicBoolean closed = new AtomicBoolean();
        commit.close().subscribe(null, null, () -> closed.set(true));

        writes.completeNext(); // x
        writes.completeNext(); // a, b
        assertFalse(flushed.get(), "c, submitted before the flush, is not written yet");
        writes.completeNext(); // c, d: the marker rode between them
        assertTrue(flushed.get());
        assertFalse(closed.get(), "e is still to be written");
        writes.completeNext(); // e
        assertTrue(closed.get());
        assertEquals(List.of(List.of("x"), List.of("a", "b"), List.of("c", "d"), List.of("e")), writes.batches);
    }

    @Test
    void aLongBacklogOfWritesThatFinishSynchronouslyDrainsWithoutGrowingTheStack() {
        int callers = 100_000;
        AtomicInteger written = new AtomicInteger();
        Sinks.Empty<Void> first = Sinks.empty();
        AtomicBoolean held = new AtomicBoolean();
        // The first write is held so the backlog piles up; every later one finishes inside its own
        // start, which a recursive drain would answer with one more stack frame per write.
        GroupCommit<String, Void> commit = bounded(1, payloads -> {
            written.addAndGet(payloads.size());
            return held.compareAndSet(false, true) ? first.asMono() : Mono.empty();
        }, vts);
        AtomicInteger completed = new AtomicInteger();
        for (int i = 0; i < callers; i++) {
            Mono.defer(() -> commit.submit("k")).subscribe(null, null, completed::incrementAndGet);
        }

        assertEquals(Sinks.EmitResult.OK, first.tryEmitEmpty());

        assertEquals(callers, written.get());
        assertEquals(callers, completed.get());
    }

    @Test
    void theBoundMustBeAtLeastOne() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> bounded(0, payloads -> Mono.empty(), vts));
        assertTrue(e.getMessage().contains("maxWeight must be at least 1 but was 0"), e.getMessage());
    }

    // ---------------------------------------------------------------- close

    @Test
    void closeFlushesWhatIsPendingThenRefusesNewSubmissions() {
        HeldWrites writes = new HeldWrites();
        GroupCommit<String, Void> commit = enqueueLike("emails", writes, TIMEOUT, vts);
        Caller inFlight = new Caller(commit, "in-flight");
        Caller pending = new Caller(commit, "pending");

        AtomicBoolean closed = new AtomicBoolean();
        commit.close().subscribe(null, e -> { throw new AssertionError(e); }, () -> closed.set(true));

        StepVerifier.create(Mono.defer(() -> commit.submit("late")))
                .expectErrorSatisfies(e -> {
                    assertInstanceOf(QueueClosedException.class, e);
                    assertTrue(e.getMessage().contains("emails"), e.getMessage());
                })
                .verify(TIMEOUT);
        assertFalse(closed.get());
        writes.completeNext();
        assertFalse(closed.get(), "the pending submission is not written yet");
        writes.completeNext();
        assertTrue(closed.get());

        assertTrue(inFlight.completed && pending.completed);
        assertEquals(List.of(List.of("in-flight"), List.of("pending")), writes.batches, "late was never written");
    }

    @Test
    void closeIsIdempotent() {
        HeldWrites writes = new HeldWrites();
        GroupCommit<String, Void> commit = enqueueLike("q", writes, TIMEOUT, vts);
        Caller pending = new Caller(commit, "a");

        Mono<Void> first = commit.close();
        Mono<Void> second = commit.close();
        AtomicInteger completions = new AtomicInteger();
        first.subscribe(null, null, completions::incrementAndGet);
        second.subscribe(null, null, completions::incrementAndGet);
        assertEquals(0, completions.get());

        writes.completeNext();

        assertEquals(2, completions.get());
        assertTrue(pending.completed);
        StepVerifier.create(commit.close()).verifyComplete();
        assertEquals(1, writes.batches.size(), "closing again writes nothing");
    }

    @Test
    void closingAnIdleCommitCompletesAtOnceWithoutAWrite() {
        AtomicInteger writes = new AtomicInteger();
        GroupCommit<String, Void> commit = enqueueLike("q", payloads -> Mono.fromRunnable(writes::incrementAndGet), TIMEOUT, vts);
        StepVerifier.create(commit.close()).verifyComplete();
        assertEquals(0, writes.get());
        StepVerifier.create(Mono.defer(() -> commit.submit("x"))).expectError(QueueClosedException.class).verify(TIMEOUT);
    }

    @Test
    void closeCompletesEvenWhenTheFlushFails() {
        HeldWrites writes = new HeldWrites();
        GroupCommit<String, Void> commit = enqueueLike("q", writes, TIMEOUT, vts);
        Caller pending = new Caller(commit, "a");
        RuntimeException failure = new RuntimeException("connection refused");

        StepVerifier.create(commit.close())
                .then(() -> writes.failNext(failure))
                .verifyComplete();
        assertSame(failure, pending.error, "the caller hears about the failure; close only reports the flush ended");
    }

    /** Writes that stay in flight until the test answers them with per-payload results. */
    private static final class HeldResultWrites implements Function<List<String>, Mono<List<Integer>>> {
        final List<List<String>> batches = Collections.synchronizedList(new ArrayList<>());
        final Deque<Sinks.One<List<Integer>>> inFlight = new ArrayDeque<>();

        @Override
        public synchronized Mono<List<Integer>> apply(List<String> payloads) {
            batches.add(List.copyOf(payloads));
            Sinks.One<List<Integer>> done = Sinks.one();
            inFlight.add(done);
            return done.asMono();
        }

        synchronized void answerNext(List<Integer> results) {
            assertEquals(Sinks.EmitResult.OK, inFlight.poll().tryEmitValue(results));
        }

        synchronized void answerNextEmpty() {
            assertEquals(Sinks.EmitResult.OK, inFlight.poll().tryEmitEmpty());
        }
    }

    @Test
    void eachCallerReceivesTheResultAtItsOwnPositionInTheMergedWrite() {
        HeldResultWrites writes = new HeldResultWrites();
        GroupCommit<String, Integer> commit = completeLike(writes, vts);
        Map<String, Integer> received = new ConcurrentHashMap<>();
        for (String payload : List.of("first", "second", "third")) {
            Mono.defer(() -> commit.submit(payload)).subscribe(r -> received.put(payload, r));
        }

        writes.answerNext(List.of(1));          // "first" went alone; the others merged behind it
        assertEquals(List.of(List.of("first"), List.of("second", "third")), writes.batches);
        writes.answerNext(List.of(20, 30));

        assertEquals(Map.of("first", 1, "second", 20, "third", 30), received);
    }

    @Test
    void aWriteWithTheWrongNumberOfResultsFailsItsBatchInsteadOfMisattributing() {
        HeldResultWrites writes = new HeldResultWrites();
        GroupCommit<String, Integer> commit = completeLike(writes, vts);
        Queue<Throwable> errors = new ConcurrentLinkedQueue<>();
        Mono.defer(() -> commit.submit("blocker")).subscribe(null, errors::add);
        Mono.defer(() -> commit.submit("a")).subscribe(null, errors::add);
        Mono.defer(() -> commit.submit("b")).subscribe(null, errors::add);

        writes.answerNext(List.of());           // one payload, no result
        writes.answerNext(List.of(7));          // two payloads, one result

        assertEquals(3, errors.size());
        errors.forEach(e -> assertInstanceOf(IllegalStateException.class, e));
    }

    @Test
    void aWriteThatCompletesWithoutResultsFailsItsCallersRatherThanLeavingThemWaiting() {
        HeldResultWrites writes = new HeldResultWrites();
        GroupCommit<String, Integer> commit = completeLike(writes, vts);
        StepVerifier.create(Mono.defer(() -> commit.submit("a")))
                .then(writes::answerNextEmpty)
                .expectError(IllegalStateException.class)
                .verify(TIMEOUT);
        // The commit is not wedged: the next submission is written.
        StepVerifier.create(Mono.defer(() -> commit.submit("b")))
                .then(() -> writes.answerNext(List.of(2)))
                .expectNext(2)
                .verifyComplete();
    }

    @Test
    void flushWaitsForEarlierSubmissionsButRefusesNothingLater() {
        HeldWrites writes = new HeldWrites();
        GroupCommit<String, Void> commit = enqueueLike("q", writes, TIMEOUT, vts);
        Caller earlier = new Caller(commit, "earlier");
        AtomicBoolean flushed = new AtomicBoolean();
        commit.flush().subscribe(null, null, () -> flushed.set(true));

        assertFalse(flushed.get(), "the write carrying the earlier submission is still in flight");
        writes.completeNext();
        assertTrue(earlier.completed);
        assertTrue(flushed.get());

        Caller later = new Caller(commit, "later");
        writes.completeNext();
        assertTrue(later.completed, "a flush is not a close");
    }

    // ---------------------------------------------------------------- policy: merging and abandonment

    /**
     * Writes that stay in flight until answered, counting cancellations, with a result per payload;
     * a claim-like commit: payloads are "lease:item", only equal leases merge, a write every
     * caller left is abandoned, and results whose caller left go to {@code unclaimed}.
     */
    private static final class HeldClaims implements Function<List<String>, Mono<List<Integer>>> {
        final List<List<String>> batches = Collections.synchronizedList(new ArrayList<>());
        final Deque<Sinks.One<List<Integer>>> inFlight = new ArrayDeque<>();
        final AtomicInteger cancelled = new AtomicInteger();
        final List<Integer> unclaimed = Collections.synchronizedList(new ArrayList<>());

        @Override
        public synchronized Mono<List<Integer>> apply(List<String> payloads) {
            batches.add(List.copyOf(payloads));
            Sinks.One<List<Integer>> done = Sinks.one();
            inFlight.add(done);
            return done.asMono().doOnCancel(cancelled::incrementAndGet);
        }

        synchronized void answerNext(List<Integer> results) {
            assertEquals(Sinks.EmitResult.OK, inFlight.poll().tryEmitValue(results));
        }

        GroupCommit<String, Integer> commit(Scheduler timer) {
            return commit(timer, 1);
        }

        GroupCommit<String, Integer> commit(Scheduler timer, int maxInFlight) {
            return new GroupCommit<>("q", "claim", this, payload -> 1, Integer.MAX_VALUE, TIMEOUT, timer,
                    GroupCommit.WriteListener.NONE,
                    new GroupCommit.Policy<>((first, other) -> lease(first).equals(lease(other)), true, unclaimed::add,
                            maxInFlight));
        }

        private static String lease(String payload) {
            return payload.substring(0, payload.indexOf(':'));
        }
    }

    @Test
    void onlyMergeableSubmissionsRideTogetherAndThoseLeftBehindKeepTheirPlace() {
        HeldClaims claims = new HeldClaims();
        GroupCommit<String, Integer> commit = claims.commit(vts);
        Map<String, Integer> received = new ConcurrentHashMap<>();
        for (String payload : List.of("1m:a", "1m:b", "1h:c", "1m:d", "1h:e")) {
            Mono.defer(() -> commit.submit(payload)).subscribe(r -> received.put(payload, r));
        }

        claims.answerNext(List.of(1));
        claims.answerNext(List.of(2, 4));
        claims.answerNext(List.of(3, 5));

        assertEquals(List.of(List.of("1m:a"), List.of("1m:b", "1m:d"), List.of("1h:c", "1h:e")), claims.batches,
                "behind the first, b and d merge; c waits, yet goes before anything queued later");
        assertEquals(Map.of("1m:a", 1, "1m:b", 2, "1h:c", 3, "1m:d", 4, "1h:e", 5), received);
    }

    @Test
    void aFlushMarkerNeverOvertakesASubmissionLeftBehind() {
        HeldClaims claims = new HeldClaims();
        GroupCommit<String, Integer> commit = claims.commit(vts);
        Mono.defer(() -> commit.submit("1m:a")).subscribe();
        Mono.defer(() -> commit.submit("1m:b")).subscribe();
        Mono.defer(() -> commit.submit("1h:c")).subscribe();
        AtomicBoolean flushed = new AtomicBoolean();
        commit.flush().subscribe(null, null, () -> flushed.set(true));
        Mono.defer(() -> commit.submit("1m:d")).subscribe();

        claims.answerNext(List.of(1));
        claims.answerNext(List.of(2));          // b only: d is behind the marker, which waits for c
        assertFalse(flushed.get(), "c, submitted before the flush, is not written yet");
        claims.answerNext(List.of(3));
        assertTrue(flushed.get());
        claims.answerNext(List.of(4));
        assertEquals(List.of(List.of("1m:a"), List.of("1m:b"), List.of("1h:c"), List.of("1m:d")), claims.batches);
    }

    @Test
    void aWriteEveryCallerLeftIsCancelledAndTheNextOneStarts() {
        HeldClaims claims = new HeldClaims();
        GroupCommit<String, Integer> commit = claims.commit(vts);
        Disposable first = Mono.defer(() -> commit.submit("1m:a")).subscribe();
        Disposable second = Mono.defer(() -> commit.submit("1m:b")).subscribe();
        Mono.defer(() -> commit.submit("1h:c")).subscribe();

        first.dispose();
        assertEquals(1, claims.cancelled.get(), "its only caller left: the write is cancelled");
        assertEquals(List.of(List.of("1m:a"), List.of("1m:b")), claims.batches, "and the next one started");
        second.dispose();
        assertEquals(2, claims.cancelled.get());
        assertEquals(3, claims.batches.size());
        assertEquals(List.of(), claims.unclaimed, "a cancelled write has no results to hand back");
    }

    @Test
    void aCallerThatLeavesBeforeItsWriteStartsIsNotWritten() {
        HeldClaims claims = new HeldClaims();
        GroupCommit<String, Integer> commit = claims.commit(vts);
        Mono.defer(() -> commit.submit("1m:a")).subscribe();
        Disposable leaving = Mono.defer(() -> commit.submit("1m:b")).subscribe();
        AtomicInteger staying = new AtomicInteger();
        Mono.defer(() -> commit.submit("1m:c")).subscribe(staying::set);

        leaving.dispose();
        claims.answerNext(List.of(1));
        assertEquals(List.of(List.of("1m:a"), List.of("1m:c")), claims.batches);
        claims.answerNext(List.of(3));
        assertEquals(3, staying.get());
        assertEquals(0, claims.cancelled.get());
    }

    @Test
    void theResultOfACallerThatLeftAWriteOthersStillWaitForGoesToUnclaimed() {
        HeldClaims claims = new HeldClaims();
        GroupCommit<String, Integer> commit = claims.commit(vts);
        Mono.defer(() -> commit.submit("1m:a")).subscribe();
        Disposable leaving = Mono.defer(() -> commit.submit("1m:b")).subscribe();
        AtomicInteger staying = new AtomicInteger();
        Mono.defer(() -> commit.submit("1m:c")).subscribe(staying::set);
        claims.answerNext(List.of(1));          // b and c now ride the write in flight

        leaving.dispose();
        assertEquals(0, claims.cancelled.get(), "c still waits for the write");
        claims.answerNext(List.of(20, 30));

        assertEquals(30, staying.get());
        assertEquals(List.of(20), claims.unclaimed, "b's result is handed to unclaimed, not dropped");
    }

    @Test
    void aSharedCommitNeverAbandonsAWriteNorDropsAnUnwrittenSubmission() {
        HeldWrites writes = new HeldWrites();
        GroupCommit<String, Void> commit = enqueueLike("q", writes, TIMEOUT, vts);
        Caller blocker = new Caller(commit, "blocker");
        Caller leaving = new Caller(commit, "leaving");
        blocker.subscription.dispose();
        leaving.subscription.dispose();

        writes.completeNext();
        writes.completeNext();
        assertEquals(List.of(List.of("blocker"), List.of("leaving")), writes.batches);
        assertEquals(0, writes.cancelled.get());
    }

    @Test
    void withTwoWritesAllowedASecondStartsWhileTheFirstRunsAndAFlushWaitsForEveryEarlierWrite() {
        HeldClaims claims = new HeldClaims();
        GroupCommit<String, Integer> commit = claims.commit(vts, 2);
        Mono.defer(() -> commit.submit("1m:a")).subscribe();
        Mono.defer(() -> commit.submit("1m:b")).subscribe();
        Mono.defer(() -> commit.submit("1m:c")).subscribe();
        assertEquals(List.of(List.of("1m:a"), List.of("1m:b")), claims.batches, "two slots, each taken at once");
        AtomicBoolean flushed = new AtomicBoolean();
        commit.flush().subscribe(null, null, () -> flushed.set(true));
        Mono.defer(() -> commit.submit("1m:d")).subscribe();

        claims.answerNext(List.of(1));
        assertEquals(List.of("1m:c"), claims.batches.get(2), "c takes the free slot; the flush stays behind it");
        claims.answerNext(List.of(2));
        assertEquals(3, claims.batches.size(), "the flush, and d behind it, wait while c is in flight");
        assertFalse(flushed.get());
        claims.answerNext(List.of(3));
        assertEquals(List.of("1m:d"), claims.batches.get(3), "once nothing is in flight the flush rides with d");
        assertFalse(flushed.get());
        claims.answerNext(List.of(4));
        assertTrue(flushed.get());
    }

    // ---------------------------------------------------------------- a second write only once the first is slow

    private static final Duration SLOW_AFTER = Duration.ofMillis(50);

    private GroupCommit<String, Void> twoOnceSlow(HeldWrites writes) {
        return new GroupCommit<>("q", "claim", GroupCommit.withoutResults(writes), payload -> 1, Integer.MAX_VALUE,
                TIMEOUT, vts, GroupCommit.WriteListener.NONE,
                new GroupCommit.Policy<>((a, b) -> true, false, r -> {}, 2, false, SLOW_AFTER, Duration.ZERO,
                        (payload, result) -> false));
    }

    @Test
    void whileTheWriteInFlightIsNotSlowWhatArrivesWaitsAndMergesIntoTheNext() {
        HeldWrites writes = new HeldWrites();
        GroupCommit<String, Void> commit = twoOnceSlow(writes);
        new Caller(commit, "a");
        List<Caller> behind = List.of(new Caller(commit, "b"), new Caller(commit, "c"));
        vts.advanceTimeBy(SLOW_AFTER.minusMillis(1));
        assertEquals(List.of(List.of("a")), writes.batches, "a second slot is there, but a is not slow yet");

        writes.completeNext();

        assertEquals(List.of(List.of("a"), List.of("b", "c")), writes.batches, "one write for both, at once");
        vts.advanceTimeBy(SLOW_AFTER.multipliedBy(2));
        assertEquals(2, writes.batches.size(), "the look that was due found nothing left to start");
        writes.completeNext();
        assertTrue(behind.stream().allMatch(caller -> caller.completed));
    }

    @Test
    void aSlowWriteInFlightNoLongerHoldsUpWhatArrivedBehindIt() {
        HeldWrites writes = new HeldWrites();
        GroupCommit<String, Void> commit = twoOnceSlow(writes);
        Caller stuck = new Caller(commit, "stuck"); // as a statement waiting for a row lock
        vts.advanceTimeBy(Duration.ofMillis(20));
        Caller b = new Caller(commit, "b");
        new Caller(commit, "c");
        vts.advanceTimeBy(Duration.ofMillis(29));
        assertEquals(1, writes.batches.size());

        vts.advanceTimeBy(Duration.ofMillis(1));

        assertEquals(List.of(List.of("stuck"), List.of("b", "c")), writes.batches,
                "once the write in flight has run slowAfter, the second slot takes what waits");
        Caller d = new Caller(commit, "d");
        vts.advanceTimeBy(SLOW_AFTER.multipliedBy(3));
        assertEquals(2, writes.batches.size(), "never more than two in flight");
        assertTrue(d.waiting());
        writes.completeNext(); // stuck
        assertTrue(stuck.completed);
        assertEquals(List.of("d"), writes.batches.get(2), "b and c have run longer than slowAfter: d starts at once");
        writes.completeNext();
        assertTrue(b.completed);
    }

    // ---------------------------------------------------------------- callers of a write coming back

    private static final Duration REGROUP = Duration.ofMillis(1);

    private GroupCommit<String, Void> regrouping(HeldWrites writes) {
        return new GroupCommit<>("q", "claim", GroupCommit.withoutResults(writes), payload -> 1, Integer.MAX_VALUE,
                TIMEOUT, vts, GroupCommit.WriteListener.NONE,
                new GroupCommit.Policy<>((a, b) -> true, false, r -> {}, 1, false, Duration.ZERO, REGROUP,
                        (payload, result) -> !payload.startsWith("done")));
    }

    @Test
    void callersOfAWriteThatComeBackOneByOneRideTheNextWriteTogether() {
        HeldWrites writes = new HeldWrites();
        GroupCommit<String, Void> commit = regrouping(writes);
        new Caller(commit, "x");
        new Caller(commit, "a");
        new Caller(commit, "b");
        new Caller(commit, "c");
        writes.completeNext(); // x
        assertEquals(List.of(List.of("x"), List.of("a", "b", "c")), writes.batches);
        writes.completeNext(); // a, b, c: three callers, each claiming again from a thread of its own

        new Caller(commit, "a2");
        new Caller(commit, "b2");
        assertEquals(2, writes.batches.size(), "the first ones back wait for the rest of their group");
        new Caller(commit, "c2");

        assertEquals(List.of("a2", "b2", "c2"), writes.batches.get(2), "all back: one write, at once");
    }

    @Test
    void theFirstOnesBackGoWithoutTheRestOnceTheRegroupingTimeHasPassed() {
        HeldWrites writes = new HeldWrites();
        GroupCommit<String, Void> commit = regrouping(writes);
        new Caller(commit, "x");
        new Caller(commit, "a");
        new Caller(commit, "b");
        writes.completeNext(); // x
        writes.completeNext(); // a, b
        new Caller(commit, "a2"); // b does not come back
        vts.advanceTimeBy(REGROUP.minusNanos(1));
        assertEquals(2, writes.batches.size());

        vts.advanceTimeBy(Duration.ofNanos(1));

        assertEquals(List.of("a2"), writes.batches.get(2));
        writes.completeNext(); // a2 carried one caller: what comes next goes at once
        new Caller(commit, "a3");
        assertEquals(List.of("a3"), writes.batches.get(3));
    }

    @Test
    void callersThatWillNotComeBackAtOnceAreNotWaitedFor() {
        HeldWrites writes = new HeldWrites();
        GroupCommit<String, Void> commit = regrouping(writes);
        new Caller(commit, "x");
        new Caller(commit, "a");
        new Caller(commit, "done-b"); // as a claim that came back short: its loop waits for work
        writes.completeNext(); // x
        writes.completeNext(); // a, done-b: only a submits again at once

        new Caller(commit, "a2");

        assertEquals(List.of("a2"), writes.batches.get(2), "nobody else to wait for");
    }

    @Test
    void aPolicyMustNotWaitANegativeTime() {
        assertThrows(IllegalArgumentException.class, () -> new GroupCommit.Policy<String, Integer>((a, b) -> true,
                false, r -> {}, 2, false, Duration.ofMillis(-1), Duration.ZERO, (p, r) -> false));
        assertThrows(IllegalArgumentException.class, () -> new GroupCommit.Policy<String, Integer>((a, b) -> true,
                false, r -> {}, 2, false, Duration.ZERO, Duration.ofMillis(-1), (p, r) -> false));
    }

    @Test
    void aPolicyMustAllowAtLeastOneWriteInFlight() {
        assertThrows(IllegalArgumentException.class,
                () -> new GroupCommit.Policy<String, Integer>((a, b) -> true, false, r -> {}, 0));
    }
}
