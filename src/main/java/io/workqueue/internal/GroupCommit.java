package io.workqueue.internal;

import io.workqueue.QueueClosedException;
import io.workqueue.WriteTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Subscription;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;

/**
 * Merges concurrent submissions into one write at a time.
 *
 * <p>Submissions go into a {@link Sinks.Many} drained by one subscriber. While a write is in
 * flight, everything that arrives accumulates; when it finishes, all of it becomes the next write.
 * So however many callers submit concurrently, exactly one write is in flight, and an idle queue
 * writes at once (no timer). Each submission's {@code Mono} emits its own result from the write
 * that carried it (or completes empty for a write without results), fails when that write fails,
 * and is the caller's alone: cancelling it never cancels the write, because the write is
 * subscribed here, not by any caller. Nothing a caller's own code does when signalled (throwing
 * from an error handler, even a {@link VirtualMachineError} thrown down its chain) can stop the
 * group commit: every other caller of the batch is still signalled, the next write still starts,
 * and the throw is logged.
 *
 * <p>Thread-safe. Emission into the sink happens under a lock: a sink refuses concurrent
 * emitters ({@code FAIL_NON_SERIALIZED}), and retrying in a loop both spins and can still give
 * up, whereas the critical section is a queue offer.
 *
 * @param <T> what one caller submits
 * @param <R> what one caller gets back; {@link Void} for writes without a per-caller result
 */
public final class GroupCommit<T, R> {
    private static final Logger log = LoggerFactory.getLogger(GroupCommit.class);

    private final String name;
    private final String operation;
    private final Function<List<T>, Mono<List<R>>> write;
    private final Duration timeout;
    private final Scheduler timer;
    private final Sinks.Many<Submission<T, R>> submissions = Sinks.many().unicast().onBackpressureBuffer();
    private final Object emitLock = new Object();
    private final Drain drain = new Drain();
    private boolean closed; // guarded by emitLock
    private @Nullable Mono<Void> closing; // guarded by emitLock

    /**
     * @param name      names the queue in errors and logs
     * @param operation names what the writes do ("enqueue", "complete") in errors and logs
     * @param write     performs one merged write of every payload in the list and emits one result
     *                  per payload, in the list's order; never called concurrently with itself
     * @param timeout   bound on one write; on expiry every caller in the batch fails with a
     *                  {@link WriteTimeoutException}
     * @param timer     the scheduler for the timeout
     */
    public GroupCommit(String name, String operation, Function<List<T>, Mono<List<R>>> write, Duration timeout,
            Scheduler timer) {
        this.name = name;
        this.operation = operation;
        this.write = write;
        this.timeout = timeout;
        this.timer = timer;
        submissions.asFlux().subscribe(drain);
    }

    /** Adapts a write that has no per-caller result: every caller's {@code Mono} completes empty. */
    public static <T> Function<List<T>, Mono<List<Void>>> withoutResults(Function<List<T>, Mono<Void>> write) {
        return payloads -> write.apply(payloads).then(Mono.fromSupplier(() -> Collections.nCopies(payloads.size(), null)));
    }

    /**
     * Submits {@code payload} to the next write. Call at subscription time (inside
     * {@code Mono.defer}); the returned {@code Mono} is hot: the submission has been made.
     */
    public Mono<R> submit(T payload) {
        Submission<T, R> submission = new Submission<>(payload, Sinks.one());
        synchronized (emitLock) {
            if (closed) {
                return Mono.error(new QueueClosedException("queue " + name + " is closed; " + operation + " refused"));
            }
            emit(submission);
        }
        return submission.done().asMono();
    }

    /**
     * Refuses every later submission and completes once everything submitted before has been
     * written (successfully or not). Idempotent: later calls return the same flush.
     */
    public Mono<Void> close() {
        synchronized (emitLock) {
            if (closing == null) {
                closed = true;
                closing = emitFlushMarker().cache();
            }
            return closing;
        }
    }

    /**
     * Completes once everything submitted before this call has been written (successfully or
     * not), without refusing later submissions. Starts at the call, like {@link #close()}.
     */
    public Mono<Void> flush() {
        synchronized (emitLock) {
            return emitFlushMarker();
        }
    }

    /**
     * Emits a marker with no payload; the returned {@code Mono} completes when the batch it rides in
     * finishes, and every earlier submission rode in that batch or an earlier one. Hold emitLock.
     */
    private Mono<Void> emitFlushMarker() {
        Submission<T, R> marker = new Submission<>(null, Sinks.one());
        emit(marker);
        return marker.done().asMono().then().onErrorResume(e -> Mono.empty());
    }

    private void emit(Submission<T, R> submission) {
        Sinks.EmitResult result = submissions.tryEmitNext(submission);
        if (result.isFailure()) {
            // Serialised and unbounded, so this means the drain was cancelled: a bug, not load.
            submission.done().tryEmitError(new IllegalStateException("group commit for " + name + " refused a submission: " + result));
        }
    }

    /** One caller's payload and the signal it waits on; a {@code null} payload is a flush marker. */
    private record Submission<T, R>(@Nullable T payload, Sinks.One<R> done) {}

    /** The single consumer: accumulates while a write is in flight, then writes all of it. */
    private final class Drain extends BaseSubscriber<Submission<T, R>> {
        private List<Submission<T, R>> pending = new ArrayList<>();
        private boolean writing;

        @Override
        protected void hookOnSubscribe(Subscription subscription) {
            subscription.request(Long.MAX_VALUE);
        }

        @Override
        protected void hookOnNext(Submission<T, R> submission) {
            List<Submission<T, R>> batch;
            synchronized (this) {
                pending.add(submission);
                batch = takeBatchIfIdle();
            }
            if (batch != null) {
                startWrite(batch);
            }
        }

        private @Nullable List<Submission<T, R>> takeBatchIfIdle() {
            if (writing || pending.isEmpty()) {
                return null;
            }
            writing = true;
            List<Submission<T, R>> batch = pending;
            pending = new ArrayList<>();
            return batch;
        }

        private void startWrite(List<Submission<T, R>> batch) {
            List<T> payloads = new ArrayList<>(batch.size());
            for (Submission<T, R> s : batch) {
                if (s.payload() != null) {
                    payloads.add(s.payload());
                }
            }
            Write run = new Write(batch);
            Mono<List<R>> written = payloads.isEmpty()
                    ? Mono.just(List.of())
                    : Mono.defer(() -> write.apply(payloads))
                            // A fallback rather than mapping TimeoutException: only this bound's
                            // expiry leaves the outcome unknown, not a TimeoutException the write
                            // itself signals.
                            .timeout(timeout, Mono.error(() -> new WriteTimeoutException(
                                    operation + " on queue " + name + " did not commit within " + timeout, timeout, null)),
                                    timer)
                            .flatMap(results -> results.size() == payloads.size()
                                    ? Mono.just(results)
                                    : Mono.error(new IllegalStateException(operation + " on queue " + name + " returned "
                                            + results.size() + " results for " + payloads.size() + " submissions")))
                            .switchIfEmpty(Mono.error(() -> new IllegalStateException(
                                    operation + " on queue " + name + " returned no results")));
            try {
                written.subscribe(results -> run.finish(results, null), error -> run.finish(List.of(), error));
            } catch (Throwable fatal) {
                // Reactor rethrows JVM-fatal errors out of subscribe; the batch must still be told,
                // and the in-flight flag cleared, or every later caller would wait forever.
                run.finish(List.of(), fatal);
            }
        }

        /** One batch being written; finishes once, whichever signal or throw comes first. */
        private final class Write {
            private final List<Submission<T, R>> batch;
            private final AtomicBoolean finished = new AtomicBoolean();

            Write(List<Submission<T, R>> batch) {
                this.batch = batch;
            }

            /** Hands each caller its result, in submission order, then lets the next write start. */
            void finish(List<R> results, @Nullable Throwable error) {
                if (!finished.compareAndSet(false, true)) {
                    return;
                }
                try {
                    if (error != null) {
                        // One line per failed write, without a stack trace: during an outage every
                        // write fails the same way, and each caller receives the exception itself.
                        log.error("group-committed {} of {} submissions on queue {} failed: {}", operation,
                                batch.size(), name, error.getMessage() != null ? error.getMessage() : error.toString());
                        log.debug("group-committed {} failure on queue {}", operation, name, error);
                    }
                    signal(results, error);
                } finally {
                    takeNextBatch();
                }
            }

            /**
             * Signals every caller, each in isolation: a caller's code runs on this thread when
             * signalled, and whatever it throws must reach neither the other callers nor the drain.
             */
            private void signal(List<R> results, @Nullable Throwable error) {
                Throwable firstThrown = null;
                int throwers = 0;
                int next = 0;
                for (Submission<T, R> s : batch) {
                    R result = error == null && s.payload() != null ? results.get(next++) : null;
                    try {
                        if (error != null) {
                            s.done().tryEmitError(error);
                        } else if (result == null) {
                            s.done().tryEmitEmpty();
                        } else {
                            s.done().tryEmitValue(result);
                        }
                    } catch (Throwable thrown) {
                        if (throwers++ == 0) {
                            firstThrown = thrown;
                        }
                    }
                }
                if (firstThrown != null) {
                    // Logged once per write, with the first trace: a caller that throws usually
                    // does so for every write, and the log should not scale with the callers.
                    log.error("{} of {} callers of a group-committed {} on queue {} threw when signalled;"
                            + " the others were signalled and the group commit carries on", throwers, batch.size(),
                            operation, name, firstThrown);
                }
            }
        }

        private void takeNextBatch() {
            List<Submission<T, R>> next;
            synchronized (this) {
                writing = false;
                next = takeBatchIfIdle();
            }
            if (next != null) {
                startWrite(next);
            }
        }
    }
}
