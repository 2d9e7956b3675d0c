package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.Stats;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkerOptions;
import io.workqueue.migrations.WorkQueueMigrations;
import io.workqueue.testing.Poll;
import io.workqueue.testing.RowLock;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.reactivestreams.Publisher;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import org.junit.jupiter.api.extension.ExtendWith;
import io.workqueue.testing.ExpectedLogs;
import reactor.core.scheduler.Schedulers;

@ExtendWith(ExpectedLogs.class)
class ProcessIT {
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private static String prefix;

    @BeforeAll
    static void createTable() {
        prefix = TestDatabase.createTable();
    }

    private static ReactiveWorkQueue<String> queue() {
        return ReactiveWorkQueue.builder(TestDatabase.pool(), String.class)
                .config(WorkQueueConfig.builder(TestDatabase.uniqueName("process")).tablePrefix(prefix).build())
                .build();
    }

    private static WorkerOptions.Builder options() {
        return WorkerOptions.builder().lease(Duration.ofMinutes(1)).poll(Duration.ofMillis(200));
    }

    private static List<String> keys(int n) {
        return IntStream.range(0, n).mapToObj(i -> String.format("k%04d", i)).toList();
    }

    /**
     * A worker of {@code concurrency} whose handlers count themselves in {@code started} and finish
     * when {@code gate} opens; returns once that many are running.
     */
    private static Disposable runHeldAtGate(ReactiveWorkQueue<String> queue, Sinks.Empty<Void> gate,
            AtomicInteger started, int concurrency) {
        Disposable worker = queue.process(item -> {
                            started.incrementAndGet();
                            return gate.asMono();
                        },
                        options().concurrency(concurrency).build())
                .subscribe();
        Poll.until(TIMEOUT, concurrency + " handler(s) running", () -> started.get() == concurrency);
        return worker;
    }

    @Test
    void everyItemIsHandledCompletedAndEmittedOnce() {
        ReactiveWorkQueue<String> queue = queue();
        queue.enqueueKeys(keys(500)).block(TIMEOUT);
        Map<String, Integer> handled = new ConcurrentHashMap<>();

        List<Item<String>> emitted = queue.process(
                        item -> Mono.fromRunnable(() -> handled.merge(item.key(), 1, Integer::sum)),
                        options().concurrency(8).claimBatch(50).build())
                .take(500)
                .collectList()
                .block(TIMEOUT);

        assertEquals(500, emitted.size());
        assertEquals(500, emitted.stream().map(Item::key).distinct().count());
        assertEquals(500, handled.size());
        assertTrue(handled.values().stream().allMatch(n -> n == 1));
        Poll.until(TIMEOUT, "all completed", () -> queue.stats().block(TIMEOUT).completed() == 500);
        assertEquals(0, queue.stats().block(TIMEOUT).pending());
    }

    @Test
    void neverRunsOrLeasesMoreThanItsConcurrency() {
        ReactiveWorkQueue<String> queue = queue();
        queue.enqueueKeys(keys(200)).block(TIMEOUT);
        AtomicInteger running = new AtomicInteger();
        AtomicInteger maxRunning = new AtomicInteger();
        Set<Long> leasedSeen = ConcurrentHashMap.newKeySet();

        queue.process(item -> Mono.defer(() -> {
                            maxRunning.accumulateAndGet(running.incrementAndGet(), Math::max);
                            return queue.stats().doOnNext(s -> leasedSeen.add(s.leased()));
                        }).doFinally(s -> running.decrementAndGet()),
                        options().concurrency(4).claimBatch(100).build())
                .take(200)
                .blockLast(TIMEOUT);

        assertTrue(maxRunning.get() <= 4, "ran " + maxRunning.get() + " handlers at once");
        assertTrue(leasedSeen.stream().allMatch(n -> n <= 4), "leased counts seen: " + leasedSeen);
    }

    @Test
    void aFailureIsReleasedWithItsBackoffAndCauseThenRetried() {
        ReactiveWorkQueue<String> queue = queue();
        queue.enqueueKeys("flaky").block(TIMEOUT);
        List<Integer> attemptsSeen = new CopyOnWriteArrayList<>();

        Item<String> done = queue.process(item -> {
                            attemptsSeen.add(item.attempts());
                            if (item.attempts() == 1) {
                                throw new IllegalStateException("first try fails");
                            }
                            return Mono.empty();
                        },
                        options().concurrency(1).backoff(attempts -> Duration.ofMillis(100L * attempts)).build())
                .blockFirst(TIMEOUT);

        assertEquals("flaky", done.key());
        assertEquals(2, done.attempts());
        assertEquals(List.of(1, 2), attemptsSeen);
        assertEquals(List.of("null"), TestDatabase.queryStrings("SELECT last_error FROM "
                + WorkQueueMigrations.tableName(prefix) + " WHERE queue_name = $1", queue.name()),
                "completion clears the error recorded by the release");
    }

    @Test
    void aFailedItemRecordsTheErrorAndWaitsOutItsBackoff() {
        ReactiveWorkQueue<String> queue = queue();
        queue.enqueueKeys("broken").block(TIMEOUT);
        Disposable worker = queue.process(item -> Mono.error(new IllegalStateException("renderer on fire")),
                        options().concurrency(1).backoff(attempts -> Duration.ofHours(1)).build())
                .subscribe();
        try {
            Poll.until(TIMEOUT, "error recorded", () -> !TestDatabase.queryStrings("SELECT last_error FROM " + WorkQueueMigrations.tableName(prefix)
                    + " WHERE queue_name = $1 AND last_error IS NOT NULL", queue.name()).isEmpty());
            assertEquals(List.of("renderer on fire"), TestDatabase.queryStrings("SELECT last_error FROM "
                    + WorkQueueMigrations.tableName(prefix) + " WHERE queue_name = $1", queue.name()));
            Stats stats = queue.stats().block(TIMEOUT);
            assertEquals(0, stats.ready(), "held back by the back-off");
            assertEquals(0, stats.leased(), "released, not left to lapse");
        } finally {
            worker.dispose();
        }
    }

    @Test
    void anAcknowledgementThatOutlivesTheWriteTimeoutIsRetriedUntilItCommits() {
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(TestDatabase.pool(), String.class)
                .config(WorkQueueConfig.builder(TestDatabase.uniqueName("slow-ack")).tablePrefix(prefix)
                        .writeTimeout(Duration.ofMillis(300)).build())
                .build();
        queue.enqueueKeys("slow").block(TIMEOUT);
        Sinks.Empty<Void> gate = Sinks.empty();
        AtomicInteger started = new AtomicInteger();
        Disposable worker = runHeldAtGate(queue, gate, started, 1);
        // Cancelled, the worker acknowledges through the group-committed complete, whose write
        // waits behind this lock past its 300 ms timeout, more than once.
        worker.dispose();
        String table = WorkQueueMigrations.tableName(prefix);
        String blocked = "SELECT pid::text FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                + " AND position($1 in query) > 0";
        try (RowLock lock = RowLock.hold(table, queue.name(), "slow")) {
            gate.tryEmitEmpty();
            List<String> first = Poll.until(TIMEOUT, "the acknowledgement blocked behind the lock",
                    () -> TestDatabase.queryStrings(blocked, table), pids -> pids.size() == 1);
            // A timed-out write is cancelled on the server and its connection closed, so the
            // retry waits on another backend: only a retry after a timeout can satisfy this.
            Poll.until(TIMEOUT, "the acknowledgement retried after timing out",
                    () -> TestDatabase.queryStrings(blocked, table),
                    pids -> pids.size() == 1 && !pids.equals(first));
        }

        Poll.until(TIMEOUT, "the acknowledgement committed once the lock was gone",
                () -> queue.stats().block(TIMEOUT).completed() == 1);
        assertEquals(1, started.get(), "the finished work was not handed out again");
    }

    @Test
    void cancellationStopsClaimingAndStillCompletesWhatWasRunning() {
        ReactiveWorkQueue<String> queue = queue();
        queue.enqueueKeys(keys(50)).block(TIMEOUT);
        Sinks.Empty<Void> gate = Sinks.empty();
        AtomicInteger started = new AtomicInteger();

        Disposable worker = runHeldAtGate(queue, gate, started, 3);
        worker.dispose();
        gate.tryEmitEmpty();

        Poll.until(TIMEOUT, "the three running items completed", () -> queue.stats().block(TIMEOUT).completed() == 3);
        Stats stats = queue.stats().block(TIMEOUT);
        assertEquals(0, stats.leased(), "nothing claimed after cancellation");
        assertEquals(47, stats.ready());
        assertEquals(3, started.get());
    }


    @Test
    void aGracefulStopCompletesOnlyOnceEveryItemItLeasedIsCompletedOrReleased() {
        ReactiveWorkQueue<String> queue = queue();
        queue.enqueueKeys(keys(20)).block(TIMEOUT);
        Sinks.Empty<Void> gate = Sinks.empty();
        Sinks.Empty<Void> stop = Sinks.empty();
        AtomicInteger started = new AtomicInteger();
        List<String> emitted = new CopyOnWriteArrayList<>();
        Sinks.Empty<Void> ended = Sinks.empty();

        queue.process(item -> {
                            started.incrementAndGet();
                            // Every other item fails, so the stop waits for releases as well as completions.
                            return item.key().hashCode() % 2 == 0
                                    ? gate.asMono()
                                    : gate.asMono().then(Mono.error(new IllegalStateException("failed during the stop")));
                        },
                        options().concurrency(4).backoff(attempts -> Duration.ofHours(1)).build(), stop.asMono())
                .doOnNext(item -> emitted.add(item.key()))
                .subscribe(null, ended::tryEmitError, ended::tryEmitEmpty);
        Poll.until(TIMEOUT, "4 handlers running", () -> started.get() == 4);
        stop.tryEmitEmpty();
        assertEquals(4, queue.stats().block(TIMEOUT).leased(), "still held while the handlers run");
        gate.tryEmitEmpty();
        ended.asMono().block(TIMEOUT);

        Stats stats = queue.stats().block(TIMEOUT);
        assertEquals(4, started.get(), "nothing claimed after the stop");
        assertEquals(0, stats.leased(), "every lease settled before the stream completed");
        assertEquals(emitted.size(), stats.completed());
        assertEquals(20 - emitted.size(), stats.pending());
    }

    // ---------------------------------------------------------------- where handlers run

    /**
     * The first day of a user whose handler blocks (issue 26): on the driver's threads sixteen
     * sleeping handlers ran one at a time and every statement of the process waited behind them.
     * By default they block on the worker's own pool, all at once, and BlockHound (active here)
     * allows it, while an enqueue on the same instance and a claim of another queue go through.
     */
    @ParameterizedTest(name = "blocking {0}")
    @ValueSource(strings = {"in the handler call", "in the publisher it returns"})
    void sixteenBlockingHandlersBlockAtOnceAndTheQueueStaysResponsive(String where) throws InterruptedException {
        ReactiveWorkQueue<String> queue = queue();
        ReactiveWorkQueue<String> other = queue();
        queue.enqueueKeys(keys(16)).block(TIMEOUT);
        other.enqueueKeys("other").block(TIMEOUT);
        CountDownLatch release = new CountDownLatch(1);
        AtomicInteger blocked = new AtomicInteger();
        Runnable block = () -> {
            blocked.incrementAndGet();
            try {
                // A blocking call, as Thread.sleep is: BlockHound fails it on a non-blocking thread.
                if (!release.await(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                    throw new IllegalStateException("never released");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            } finally {
                blocked.decrementAndGet();
            }
        };
        Function<Item<String>, Publisher<?>> handler = where.equals("in the handler call")
                ? item -> {
                    block.run();
                    return Mono.empty();
                }
                : item -> Mono.fromRunnable(block);
        List<String> completed = new CopyOnWriteArrayList<>();

        Disposable worker = queue.process(handler, options().concurrency(16).claimBatch(16).build())
                .subscribe(item -> completed.add(item.key()));
        try {
            Poll.until(TIMEOUT, "16 handlers blocking at once", () -> blocked.get() == 16,
                    () -> blocked.get() + " blocking, " + completed.size() + " completed");

            queue.enqueueKeys("meanwhile").block(Duration.ofSeconds(1));
            assertEquals(1, other.claim(1, Duration.ofMinutes(1)).block(Duration.ofSeconds(1)).size(),
                    "another queue's claim went through");
            assertEquals(16, blocked.get(), "still blocking while the statements ran");
        } finally {
            release.countDown();
        }
        Poll.until(TIMEOUT, "the 16 and the one enqueued meanwhile completed", () -> completed.size() == 17);
        worker.dispose();
    }

    @Test
    void onTheDriversThreadsABlockingHandlerIsCaughtByBlockHound() {
        ReactiveWorkQueue<String> queue = queue();
        queue.enqueueKeys("sleeper").block(TIMEOUT);
        Disposable worker = queue.process(item -> {
                            try {
                                Thread.sleep(10);
                            } catch (InterruptedException e) {
                                Thread.currentThread().interrupt();
                            }
                            return Mono.empty();
                        },
                        options().concurrency(1).handlerScheduler(Schedulers.immediate())
                                .backoff(attempts -> Duration.ofHours(1)).build())
                .subscribe();
        try {
            String error = Poll.until(TIMEOUT, "the item released with the handler's failure",
                    () -> TestDatabase.queryStrings("SELECT coalesce(last_error, '') FROM "
                            + WorkQueueMigrations.tableName(prefix) + " WHERE queue_name = $1", queue.name()),
                    errors -> !errors.isEmpty() && !errors.get(0).isEmpty()).get(0);
            assertTrue(error.contains("Blocking call!") && error.contains("sleep"), error);
        } finally {
            worker.dispose();
        }
    }

    @Test
    void aHandlerThatHoldsADriverThreadIsNamedInOneWarningAMinute() {
        ReactiveWorkQueue<String> queue = queue();
        queue.enqueueKeys(keys(3)).block(TIMEOUT);
        queue.process(new SpinningHandler(Duration.ofMillis(150)),
                        options().concurrency(1).handlerScheduler(Schedulers.immediate()).build())
                .take(3)
                .blockLast(TIMEOUT);
        String log = ExpectedLogs.text();

        List<String> warnings = log.lines().filter(line -> line.contains("WARN") && line.contains("held non-blocking thread"))
                .toList();
        assertEquals(1, warnings.size(), () -> "one warning for three calls: " + log);
        String warning = warnings.get(0);
        for (String part : List.of("SpinningHandler", "of queue " + queue.name(), " ms on item k0000")) {
            assertTrue(warning.contains(part), () -> warning + " should name " + part);
        }
        long millis = Long.parseLong(warning.replaceAll(".* for (\\d+) ms on item .*", "$1"));
        assertTrue(millis >= 150, warning);
    }

    /** A handler that holds its thread without a blocking call (so BlockHound lets it), as CPU-bound work does. */
    private record SpinningHandler(Duration spin) implements Function<Item<String>, Publisher<?>> {
        @Override
        public Publisher<?> apply(Item<String> item) {
            long end = System.nanoTime() + spin.toNanos();
            // Not even Thread.onSpinWait(): BlockHound counts that as blocking.
            long spins = 0;
            while (System.nanoTime() - end < 0) {
                spins++;
            }
            return spins >= 0 ? Mono.empty() : Mono.never();
        }
    }
}
