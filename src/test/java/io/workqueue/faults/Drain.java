package io.workqueue.faults;

import io.workqueue.testing.Poll;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkerOptions;
import io.workqueue.internal.SqlStates;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.Disposables;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.util.retry.Retry;

/**
 * Real workers and a real producer on one queue, recording everything in a {@link Ledger}.
 *
 * <p>Each worker is what a user would write over {@code claimStream}: it takes items as they are
 * leased, acknowledges them in batches with {@code complete}, and when an acknowledgement fails
 * because the database went away, tries it again with back-off ({@code complete} is idempotent; the
 * library's writers retry only what PostgreSQL asks to be retried, so riding out an outage is the
 * worker's decision). The producer enqueues fresh keys in small batches and retries a failed
 * enqueue, noting that the failed run may have committed.
 */
final class Drain implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(Drain.class);

    private final ReactiveWorkQueue<String> queue;
    private final Ledger ledger;
    private final Disposable.Composite running = Disposables.composite();
    private final Queue<Throwable> workerFailures = new ConcurrentLinkedQueue<>();
    private final Queue<Long> completionTimes = new ConcurrentLinkedQueue<>();
    private final Queue<Long> enqueueSuccessTimes = new ConcurrentLinkedQueue<>();
    private final AtomicInteger completeRetries = new AtomicInteger();
    private final AtomicInteger enqueueFailures = new AtomicInteger();
    private final AtomicLong slowestEnqueueFailureNanos = new AtomicLong();
    private final AtomicInteger producedBatches = new AtomicInteger();
    private final Set<String> enqueueErrorKinds = ConcurrentHashMap.newKeySet();
    private volatile boolean producerDone = true; // until a producer starts

    Drain(ReactiveWorkQueue<String> queue, Ledger ledger) {
        this.queue = queue;
        this.ledger = ledger;
    }

    /** Enqueues {@code count} keys named {@code prefix + i} before the workers start. */
    void preload(String prefix, int count) {
        int batch = 1000;
        for (int from = 0; from < count; from += batch) {
            List<String> keys = keys(prefix, from, Math.min(count, from + batch));
            queue.enqueueKeys(keys).block(Duration.ofSeconds(30));
            ledger.enqueued(keys);
        }
    }

    /** Starts {@code count} claimStream workers. */
    void startWorkers(int count, Duration lease, Duration poll) {
        for (int w = 0; w < count; w++) {
            String name = "worker-" + w;
            running.add(queue.claimStream(lease, poll)
                    .doOnNext(item -> ledger.claimed(item, name))
                    .map(Item::key)
                    // Fair back-pressure: the buffer asks for no more than it can hand on, so the
                    // stream leases only what this worker is about to acknowledge.
                    .bufferTimeout(100, Duration.ofMillis(10), true)
                    // Up to four acknowledgements in flight keep demand, and so claims, running while
                    // acknowledgements ride out an outage: both paths meet the fault.
                    .flatMap(keys -> queue.complete(keys)
                            .retryWhen(Retry.backoff(Long.MAX_VALUE, Duration.ofMillis(50))
                                    .maxBackoff(Duration.ofSeconds(1))
                                    .filter(SqlStates::isTransient)
                                    .doBeforeRetry(signal -> completeRetries.incrementAndGet()))
                            .doOnSuccess(n -> {
                                ledger.completed(keys);
                                long now = System.nanoTime();
                                for (int i = 0; i < keys.size(); i++) {
                                    completionTimes.add(now);
                                }
                            }), 4)
                    .subscribe(n -> {}, error -> {
                        log.error("{} stopped", name, error);
                        workerFailures.add(error);
                    }, () -> workerFailures.add(new AssertionError(name + " completed; claimStream is endless"))));
        }
    }

    /**
     * Starts a worker that runs the library's own {@code process()}: its handler records each claim
     * and does nothing else; each item it emits is a completion it saw acknowledged.
     */
    void startProcessWorker(String name, WorkerOptions options) {
        running.add(queue.process(item -> Mono.fromRunnable(() -> ledger.claimed(item, name)), options)
                .subscribe(item -> {
                    ledger.completed(List.of(item.key()));
                    completionTimes.add(System.nanoTime());
                }, error -> {
                    log.error("{} stopped", name, error);
                    workerFailures.add(error);
                }, () -> workerFailures.add(new AssertionError(name + " completed; process() is endless"))));
    }

    /**
     * Starts a producer that enqueues {@code batches} batches of {@code batchSize} fresh keys,
     * one batch every {@code pace}, retrying each failed batch until it commits.
     */
    void startProducer(String prefix, int batches, int batchSize, Duration pace) {
        producerDone = false;
        running.add(Flux.range(0, batches)
                .delayElements(pace)
                .concatMap(b -> {
                    List<String> keys = keys(prefix, b * batchSize, (b + 1) * batchSize);
                    return Mono.defer(() -> {
                                long start = System.nanoTime();
                                return queue.enqueueKeys(keys).doOnError(e -> {
                                    slowestEnqueueFailureNanos.accumulateAndGet(System.nanoTime() - start, Math::max);
                                    enqueueFailures.incrementAndGet();
                                    enqueueErrorKinds.add(describe(e));
                                    ledger.enqueueRetried(keys);
                                });
                            })
                            // Any failed enqueue is retried, but never an Error (BlockHound's included).
                            .retryWhen(Retry.backoff(Long.MAX_VALUE, Duration.ofMillis(50)).maxBackoff(Duration.ofMillis(500))
                                    .filter(e -> !(e instanceof Error)))
                            .doOnSuccess(ignored -> {
                                ledger.enqueued(keys);
                                enqueueSuccessTimes.add(System.nanoTime());
                                producedBatches.incrementAndGet();
                            });
                })
                .subscribe(ignored -> {}, error -> workerFailures.add(error), () -> producerDone = true));
    }

    boolean producerDone() {
        return producerDone;
    }

    int producedBatches() {
        return producedBatches.get();
    }

    /** Waits until the producer has finished and workers have completed every key it enqueued. */
    void awaitDrained(Duration timeout) {
        Poll.until(timeout, "every enqueued key is completed",
                () -> !workerFailures.isEmpty() || (producerDone && ledger.completedKeys() == ledger.enqueuedKeys()),
                this::progress);
        assertNoWorkerFailed();
    }

    void awaitCompletedAtLeast(long keys, Duration timeout) {
        Poll.until(timeout, keys + " keys are completed",
                () -> !workerFailures.isEmpty() || ledger.completedKeys() >= keys, this::progress);
        assertNoWorkerFailed();
    }

    /** What ended a worker's stream (or the producer's), in the order it happened; empty while all run. */
    List<Throwable> failures() {
        return List.copyOf(workerFailures);
    }

    void assertNoWorkerFailed() {
        assertTrue(workerFailures.isEmpty(), () -> "a worker or the producer stopped: " + workerFailures);
    }

    /** Nanos from {@code since} to the first acknowledged completion after it, or -1 if none yet. */
    long firstCompletionAfter(long since) {
        return firstAfter(completionTimes, since);
    }

    /** Nanos from {@code since} to the first committed producer batch after it, or -1 if none yet. */
    long firstEnqueueAfter(long since) {
        return firstAfter(enqueueSuccessTimes, since);
    }

    private static long firstAfter(Queue<Long> times, long since) {
        long first = Long.MAX_VALUE;
        for (long t : times) {
            if (t > since && t < first) {
                first = t;
            }
        }
        return first == Long.MAX_VALUE ? -1 : first - since;
    }

    int completeRetries() {
        return completeRetries.get();
    }

    int enqueueFailures() {
        return enqueueFailures.get();
    }

    /** The distinct kinds of error enqueue callers saw: exception class and SQLSTATE. */
    Set<String> enqueueErrorKinds() {
        return Set.copyOf(enqueueErrorKinds);
    }

    private static String describe(Throwable error) {
        String state = SqlStates.sqlState(error);
        return error.getClass().getSimpleName() + (state == null ? "" : "[" + state + "]");
    }

    Duration slowestEnqueueFailure() {
        return Duration.ofNanos(slowestEnqueueFailureNanos.get());
    }

    String progress() {
        return "(completed " + ledger.completedKeys() + " of " + ledger.enqueuedKeys() + " enqueued; producer "
                + (producerDone ? "done" : "at batch " + producedBatches.get()) + "; failures " + workerFailures + ")";
    }

    static List<String> keys(String prefix, int from, int to) {
        List<String> keys = new ArrayList<>(to - from);
        for (int i = from; i < to; i++) {
            keys.add(prefix + i);
        }
        return keys;
    }

    @Override
    public void close() {
        running.dispose();
    }
}
