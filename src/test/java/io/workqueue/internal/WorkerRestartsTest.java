package io.workqueue.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.spi.ILoggingEvent;
import io.workqueue.WorkerOptions;
import io.workqueue.testing.ExpectedLogs;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.reactivestreams.Publisher;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * {@link WorkerRestarts} on virtual time, with scripted workers: when a worker is started again,
 * after which delay, what it logs, and how a graceful stop reaches it.
 */
@ExtendWith(ExpectedLogs.class)
class WorkerRestartsTest {
    private static final Duration FIRST = Duration.ofSeconds(1);
    private static final Duration MAX = Duration.ofSeconds(8);

    private final VirtualTimeScheduler vts = VirtualTimeScheduler.create();

    @AfterEach
    void disposeTimer() {
        vts.dispose();
    }

    /** Workers that each run one step of {@code script}: an item to emit before failing, or none. */
    private static final class ScriptedWorkers implements Function<Publisher<?>, Flux<String>> {
        final List<Boolean> emitsBeforeFailing;
        final List<Long> startedAt = new CopyOnWriteArrayList<>();
        final List<Publisher<?>> stops = new CopyOnWriteArrayList<>();
        final VirtualTimeScheduler clock;

        ScriptedWorkers(VirtualTimeScheduler clock, Boolean... emitsBeforeFailing) {
            this.clock = clock;
            this.emitsBeforeFailing = List.of(emitsBeforeFailing);
        }

        @Override
        public Flux<String> apply(Publisher<?> stop) {
            int incarnation = startedAt.size();
            startedAt.add(clock.now(java.util.concurrent.TimeUnit.MILLISECONDS));
            stops.add(stop);
            if (incarnation >= emitsBeforeFailing.size()) {
                // The last worker runs until stopped, then completes.
                return Mono.from(stop).then(Mono.<String>empty()).flux();
            }
            Flux<String> failure = Flux.error(new IllegalStateException("table gone " + incarnation));
            Flux<String> run = emitsBeforeFailing.get(incarnation) ? Flux.just("item " + incarnation).concatWith(failure) : failure;
            // Like the real worker, one started after its stop was signalled ends at once.
            return Flux.firstWithSignal(Mono.from(stop).thenMany(Flux.<String>empty()), run);
        }
    }

    private static WorkerOptions restarting() {
        return WorkerOptions.builder().restartOnError(FIRST, MAX).build();
    }

    @Test
    void withoutARestartBackOffTheStreamEndsWithTheWorkersError() {
        ScriptedWorkers workers = new ScriptedWorkers(vts, false);
        AtomicReference<Throwable> error = new AtomicReference<>();
        WorkerRestarts.of(WorkerOptions.builder().build(), "jobs", "h", vts, null, workers)
                .subscribe(item -> { }, error::set);
        vts.advanceTimeBy(Duration.ofHours(1));
        assertEquals("table gone 0", error.get().getMessage());
        assertEquals(1, workers.startedAt.size());
    }

    @Test
    void aFailingWorkerIsStartedAgainAfterADoublingDelayThatStartsOverOnceItCompletesAnItem() {
        // Three failures in a row, then one worker completes an item before failing, then one more failure.
        ScriptedWorkers workers = new ScriptedWorkers(vts, false, false, false, false, false, true, false);
        List<String> items = new ArrayList<>();
        AtomicReference<Throwable> error = new AtomicReference<>();
        WorkerRestarts.of(restarting(), "jobs", "recorder", vts, null, workers).subscribe(items::add, error::set);
        vts.advanceTimeBy(Duration.ofMinutes(5));

        assertEquals(8, workers.startedAt.size(), "every scripted failure restarted, the last worker running");
        List<Long> delays = new ArrayList<>();
        for (int i = 1; i < workers.startedAt.size(); i++) {
            delays.add(workers.startedAt.get(i) - workers.startedAt.get(i - 1));
        }
        long[] ceilings = {1_000, 2_000, 4_000, 8_000, 8_000, 1_000, 2_000};
        for (int i = 0; i < ceilings.length; i++) {
            long delay = delays.get(i);
            assertTrue(delay >= ceilings[i] / 2 && delay <= ceilings[i],
                    "restart " + (i + 1) + " after " + delay + " ms, expected between half of and " + ceilings[i]);
        }
        assertEquals(List.of("item 5"), items);
        assertEquals(null, error.get(), "restarting never ends the stream with the error");
        List<String> warnings = ExpectedLogs.events().stream().map(ILoggingEvent::getFormattedMessage).toList();
        assertEquals(7, warnings.size());
        assertEquals("worker of queue jobs (handler recorder) ended on an error; restarting it after a back-off"
                + " (restart 1 in a row)", warnings.get(0));
        assertTrue(warnings.get(4).endsWith("(restart 5 in a row)"), warnings.get(4));
        assertTrue(warnings.get(5).endsWith("(restart 1 in a row)"), "a completed item starts the count over");
        assertTrue(warnings.get(6).endsWith("(restart 2 in a row)"), warnings.get(6));
        assertEquals("table gone 0", ExpectedLogs.events().get(0).getThrowableProxy().getMessage());
    }

    @Test
    void aStopDuringABackOffEndsTheStreamWithoutWaitingAndTheStopIsWatchedOnce() {
        ScriptedWorkers workers = new ScriptedWorkers(vts, false, false, false, false);
        AtomicInteger stopSubscriptions = new AtomicInteger();
        Sinks.Empty<Void> stop = Sinks.empty();
        Mono<Void> watched = stop.asMono().doOnSubscribe(s -> stopSubscriptions.incrementAndGet());
        AtomicReference<Boolean> completed = new AtomicReference<>(false);
        WorkerRestarts.of(restarting(), "jobs", "h", vts, watched, workers)
                .subscribe(item -> { }, error -> { }, () -> completed.set(true));
        vts.advanceTimeBy(Duration.ofSeconds(3)); // two failures at most; a back-off is running
        int started = workers.startedAt.size();
        assertFalse(completed.get());

        stop.tryEmitEmpty();
        vts.advanceTime(); // nothing waits out the back-off
        assertTrue(completed.get(), "the stream completes once the stop reaches the next worker");
        assertEquals(started + 1, workers.startedAt.size(), "the next worker was started, and stopped at once");
        assertEquals(1, stopSubscriptions.get(), "the caller's stop is subscribed once, however many workers");
    }

    @Test
    void aWorkerThatFailsAfterTheStopEndsTheStreamWithItsErrorRatherThanRestarting() {
        Sinks.Empty<Void> stop = Sinks.empty();
        Sinks.Empty<Void> failNow = Sinks.empty();
        AtomicInteger started = new AtomicInteger();
        Function<Publisher<?>, Flux<String>> failsWhenTold = given -> {
            started.incrementAndGet();
            return failNow.asMono().then(Mono.<String>error(new IllegalStateException("failed while stopping"))).flux();
        };
        AtomicReference<Throwable> error = new AtomicReference<>();
        WorkerRestarts.of(restarting(), "jobs", "h", vts, stop.asMono(), failsWhenTold).subscribe(item -> { }, error::set);
        stop.tryEmitEmpty();
        failNow.tryEmitEmpty();
        vts.advanceTimeBy(Duration.ofMinutes(1));
        assertEquals("failed while stopping", error.get().getMessage());
        assertEquals(1, started.get());
    }

    @Test
    void cancellingTheStreamDisposesTheWatchOnTheStop() {
        ScriptedWorkers workers = new ScriptedWorkers(vts, false);
        AtomicInteger cancelled = new AtomicInteger();
        Mono<Void> stop = Mono.<Void>never().doOnCancel(cancelled::incrementAndGet);
        Disposable run = WorkerRestarts.of(restarting(), "jobs", "h", vts, stop, workers).subscribe();
        vts.advanceTimeBy(Duration.ofSeconds(2));
        assertEquals(2, workers.startedAt.size());
        run.dispose();
        assertEquals(1, cancelled.get());
    }
}
