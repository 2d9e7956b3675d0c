package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.SnoozeException;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkQueueMeters;
import io.workqueue.WorkerOptions;
import io.workqueue.testing.ExpectedLogs;
import io.workqueue.testing.Poll;
import io.workqueue.testing.Queues;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * process() with a maximum run time: handlers longer than their lease keep it alive on the
 * database clock, up to the maximum; a lease found taken over cancels its handler; a handler
 * snoozes its item by failing with SnoozeException.
 */
@ExtendWith(ExpectedLogs.class)
class LongHandlersIT {
    private static final Duration WAIT = Duration.ofSeconds(20);
    private static final Duration SHORT_LEASE = Duration.ofMillis(600);
    private static String prefix;

    @BeforeAll
    static void createTable() {
        prefix = TestDatabase.createTable();
    }

    private static WorkerOptions.Builder options() {
        return WorkerOptions.builder().lease(SHORT_LEASE).poll(Duration.ofMillis(100));
    }

    @Test
    void aHandlerRunningFiveLeasesLongCompletesOnceWhileAnotherInstanceFindsNothing() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "long-handler");
        ReactiveWorkQueue<String> other = Queues.over(TestDatabase.pool(), prefix, queue.name(), c -> c);
        queue.enqueueKeys("slow").block(WAIT);
        AtomicInteger calls = new AtomicInteger();
        ConcurrentLinkedQueue<String> stolen = new ConcurrentLinkedQueue<>();
        Disposable.Swap thief = reactor.core.Disposables.swap();
        Item<String> done = queue.process(item -> {
                    calls.incrementAndGet();
                    // Once it runs, another instance claims all along: it must never get the item.
                    thief.update(other.claimStream(Duration.ofMinutes(5), Duration.ofMillis(50))
                            .subscribe(taken -> stolen.add(taken.key())));
                    return Mono.delay(SHORT_LEASE.multipliedBy(5));
                }, options().maxRunTime(Duration.ofMinutes(1)).build())
                .blockFirst(WAIT);
        thief.dispose();

        assertEquals("slow", done.key());
        assertEquals(1, calls.get(), "the handler ran once");
        assertEquals(List.of(), List.copyOf(stolen), "no other instance got the item while it ran");
        assertEquals("1", Queues.column(prefix, queue, "slow", "attempts"));
        assertEquals("false", Queues.column(prefix, queue, "slow", "completed_at IS NULL"));
    }

    @Test
    void withoutAMaximumRunTimeTheSameHandlerIsCancelledAtItsLeasesEnd() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "no-keeping");
        queue.enqueueKeys("slow").block(WAIT);
        Sinks.Empty<Void> cancelled = Sinks.empty();
        Disposable worker = queue.process(item -> Mono.never().doOnCancel(cancelled::tryEmitEmpty),
                options().build()).subscribe();
        try {
            cancelled.asMono().block(WAIT);
        } finally {
            worker.dispose();
        }
        ExpectedLogs.assertLogged(Level.WARN, "outlived its lease");
    }

    @Test
    void aHandlerOutrunningItsMaximumRunTimeIsCancelledAndItsItemReleased() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "overrun");
        queue.enqueueKeys("endless").block(WAIT);
        AtomicBoolean cancelled = new AtomicBoolean();
        Disposable worker = queue.process(item -> Mono.never().doOnCancel(() -> cancelled.set(true)),
                options().maxRunTime(SHORT_LEASE.multipliedBy(3)).backoff(attempts -> Duration.ofHours(1)).build())
                .subscribe();
        try {
            Poll.until(WAIT, "released with its error",
                    () -> !"null".equals(Queues.column(prefix, queue, "endless", "last_error")));
        } finally {
            worker.dispose();
        }
        assertTrue(cancelled.get(), "the handler was cancelled");
        assertTrue(Queues.column(prefix, queue, "endless", "last_error").contains("maxRunTime"));
        assertEquals("true", Queues.column(prefix, queue, "endless",
                "lease_until = 'epoch' AND available_at > now() + INTERVAL '50 minutes'"), "released after its back-off");
        assertEquals("1", Queues.column(prefix, queue, "endless", "attempts"));
    }

    @Test
    void aLeaseFoundTakenOverCancelsItsHandlerAndDiscardsItsResult() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(TestDatabase.pool(), String.class)
                .config(WorkQueueConfig.builder(TestDatabase.uniqueName("taken-over")).tablePrefix(prefix).build())
                .meterRegistry(registry)
                .build();
        ReactiveWorkQueue<String> other = Queues.over(TestDatabase.pool(), prefix, queue.name(), c -> c);
        queue.enqueueKeys("k").block(WAIT);
        Sinks.Empty<Void> started = Sinks.empty();
        Sinks.Empty<Void> cancelled = Sinks.empty();
        Sinks.Empty<Void> release = Sinks.empty();
        ConcurrentLinkedQueue<String> completed = new ConcurrentLinkedQueue<>();
        // A lease long enough that the test's own steps fit in half of it: the extension comes after.
        Duration lease = Duration.ofSeconds(4);
        Disposable worker = queue.process(item -> {
                    started.tryEmitEmpty();
                    // Finishes only when the test says so: after its lease was taken over, its
                    // completion would be waste.
                    return release.asMono().doOnCancel(cancelled::tryEmitEmpty);
                }, options().lease(lease).maxRunTime(Duration.ofMinutes(1)).build())
                .subscribe(item -> completed.add(item.key()));
        try {
            started.asMono().block(WAIT);
            // This process stalls (a long GC pause, say): its lease lapses and another takes it.
            Queues.update(prefix, queue, "k", "lease_until = now() - INTERVAL '1 second'");
            Item<String> taken = other.claim(1, Duration.ofMinutes(10)).block(WAIT).get(0);
            assertTrue(taken.reclaimed());
            String leaseOfNewHolder = Queues.column(prefix, queue, "k", "lease_until");

            cancelled.asMono().block(WAIT);
            release.tryEmitEmpty();
            assertEquals(leaseOfNewHolder, Queues.column(prefix, queue, "k", "lease_until"),
                    "the new holder's lease is untouched");
            assertEquals("true", Queues.column(prefix, queue, "k", "completed_at IS NULL"), "nothing completed it");
            assertEquals(1.0, registry.counter(WorkQueueMeters.EXTENSIONS_REFUSED, WorkQueueMeters.QUEUE_TAG,
                    queue.name()).count());
            assertEquals(List.of(), List.copyOf(completed));
        } finally {
            worker.dispose();
        }
        ExpectedLogs.assertLogged(Level.WARN, "no longer this worker");
    }

    @Test
    void manyLongHandlersAreKeptAliveTogether() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(TestDatabase.pool(), String.class)
                .config(WorkQueueConfig.builder(TestDatabase.uniqueName("many-long")).tablePrefix(prefix).build())
                .meterRegistry(registry)
                .build();
        int n = 40;
        queue.enqueueKeys(IntStream.range(0, n).mapToObj(i -> "k" + i).toList()).block(WAIT);
        // A lease of a second: forty handlers' extensions share statements with room to spare on a
        // busy machine, and each handler runs three leases.
        Duration lease = Duration.ofSeconds(1);
        List<Item<String>> done = queue.process(item -> Mono.delay(lease.multipliedBy(3)),
                        options().lease(lease).concurrency(n).claimBatch(n).maxRunTime(Duration.ofMinutes(1)).build())
                .take(n)
                .collectList()
                .block(WAIT);
        assertEquals(n, done.size());
        assertTrue(done.stream().allMatch(item -> item.attempts() == 1 && !item.reclaimed()));
        double extensions = registry.counter(WorkQueueMeters.EXTENSIONS, WorkQueueMeters.QUEUE_TAG, queue.name()).count();
        assertTrue(extensions >= n, "each handler was extended at least once: " + extensions);
        assertEquals(0.0, registry.counter(WorkQueueMeters.EXTENSIONS_REFUSED, WorkQueueMeters.QUEUE_TAG,
                queue.name()).count());
    }

    @Test
    void aHandlerSnoozesItsItemWithoutSpendingAnAttempt() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(TestDatabase.pool(), String.class)
                .config(WorkQueueConfig.builder(TestDatabase.uniqueName("snooze-handler")).tablePrefix(prefix)
                        .maxAttempts(1).build())
                .meterRegistry(registry)
                .build();
        queue.enqueueKeys("not-ready").block(WAIT);
        AtomicInteger calls = new AtomicInteger();
        Disposable worker = queue.process(item -> {
                    calls.incrementAndGet();
                    return Mono.error(new SnoozeException(Duration.ofMillis(200)));
                }, options().build())
                .subscribe();
        try {
            // With one attempt allowed, a release would stall the item after the first call.
            Poll.until(WAIT, "called again after snoozes", () -> calls.get() >= 3);
        } finally {
            worker.dispose();
        }
        assertTrue(registry.counter(WorkQueueMeters.SNOOZED, WorkQueueMeters.QUEUE_TAG, queue.name()).count() >= 2);
        assertEquals("null", Queues.column(prefix, queue, "not-ready", "last_error"), "a snooze records no error");
    }
}
