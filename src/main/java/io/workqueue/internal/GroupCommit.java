package io.workqueue.internal;

import io.workqueue.QueueClosedException;
import io.workqueue.WorkQueueException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeoutException;
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
 * writes at once (no timer). Each submission's {@code Mono} completes when the write that carried
 * it has, fails when that write fails, and is the caller's alone: cancelling it never cancels the
 * write, because the write is subscribed here, not by any caller.
 *
 * <p>Thread-safe. Emission into the sink happens under a lock: a sink refuses concurrent
 * emitters ({@code FAIL_NON_SERIALIZED}), and retrying in a loop both spins and can still give
 * up, whereas the critical section is a queue offer.
 *
 * @param <T> what one caller submits
 */
public final class GroupCommit<T> {
    private static final Logger log = LoggerFactory.getLogger(GroupCommit.class);

    private final String name;
    private final Function<List<T>, Mono<Void>> write;
    private final Duration timeout;
    private final Scheduler timer;
    private final Sinks.Many<Submission<T>> submissions = Sinks.many().unicast().onBackpressureBuffer();
    private final Object emitLock = new Object();
    private final Drain drain = new Drain();
    private boolean closed; // guarded by emitLock
    private @Nullable Mono<Void> closing; // guarded by emitLock

    /**
     * @param name    names the queue in errors and logs
     * @param write   performs one merged write of every submission in the list; must not be
     *                called concurrently with itself, and is not
     * @param timeout bound on one write; on expiry every caller in the batch fails
     * @param timer   the scheduler for the timeout
     */
    public GroupCommit(String name, Function<List<T>, Mono<Void>> write, Duration timeout, Scheduler timer) {
        this.name = name;
        this.write = write;
        this.timeout = timeout;
        this.timer = timer;
        submissions.asFlux().subscribe(drain);
    }

    /**
     * Submits {@code payload} to the next write. Call at subscription time (inside
     * {@code Mono.defer}); the returned {@code Mono} is hot: the submission has been made.
     */
    public Mono<Void> submit(T payload) {
        Submission<T> submission = new Submission<>(payload, Sinks.one());
        synchronized (emitLock) {
            if (closed) {
                return Mono.error(new QueueClosedException("queue " + name + " is closed; enqueue refused"));
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
                // A marker with no payload: it completes when the batch it rides in finishes, and
                // every earlier submission rode in that batch or an earlier one.
                Submission<T> marker = new Submission<>(null, Sinks.one());
                emit(marker);
                closing = marker.done().asMono().onErrorResume(e -> Mono.empty()).cache();
            }
            return closing;
        }
    }

    private void emit(Submission<T> submission) {
        Sinks.EmitResult result = submissions.tryEmitNext(submission);
        if (result.isFailure()) {
            // Serialised and unbounded, so this means the drain was cancelled: a bug, not load.
            submission.done().tryEmitError(new IllegalStateException("group commit for " + name + " refused a submission: " + result));
        }
    }

    /** One caller's payload and the signal it waits on; a {@code null} payload is a flush marker. */
    private record Submission<T>(@Nullable T payload, Sinks.One<Void> done) {}

    /** The single consumer: accumulates while a write is in flight, then writes all of it. */
    private final class Drain extends BaseSubscriber<Submission<T>> {
        private List<Submission<T>> pending = new ArrayList<>();
        private boolean writing;

        @Override
        protected void hookOnSubscribe(Subscription subscription) {
            subscription.request(Long.MAX_VALUE);
        }

        @Override
        protected void hookOnNext(Submission<T> submission) {
            List<Submission<T>> batch;
            synchronized (this) {
                pending.add(submission);
                batch = takeBatchIfIdle();
            }
            if (batch != null) {
                startWrite(batch);
            }
        }

        private @Nullable List<Submission<T>> takeBatchIfIdle() {
            if (writing || pending.isEmpty()) {
                return null;
            }
            writing = true;
            List<Submission<T>> batch = pending;
            pending = new ArrayList<>();
            return batch;
        }

        private void startWrite(List<Submission<T>> batch) {
            List<T> payloads = new ArrayList<>(batch.size());
            for (Submission<T> s : batch) {
                if (s.payload() != null) {
                    payloads.add(s.payload());
                }
            }
            Mono<Void> run = payloads.isEmpty()
                    ? Mono.empty()
                    : Mono.defer(() -> write.apply(payloads))
                            .timeout(timeout, timer)
                            .onErrorMap(TimeoutException.class, e -> new WorkQueueException(
                                    "enqueue on queue " + name + " did not commit within " + timeout, e));
            run.subscribe(
                    null,
                    error -> finish(batch, error),
                    () -> finish(batch, null));
        }

        private void finish(List<Submission<T>> batch, @Nullable Throwable error) {
            if (error != null) {
                // One line per failed flush, without a stack trace: during an outage every flush
                // fails the same way, and each caller receives the exception itself.
                log.error("group-committed enqueue of {} submissions on queue {} failed: {}", batch.size(), name,
                        error.getMessage() != null ? error.getMessage() : error.toString());
                log.debug("group-committed enqueue failure on queue {}", name, error);
            }
            for (Submission<T> s : batch) {
                if (error == null) {
                    s.done().tryEmitEmpty();
                } else {
                    s.done().tryEmitError(error);
                }
            }
            List<Submission<T>> next;
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
