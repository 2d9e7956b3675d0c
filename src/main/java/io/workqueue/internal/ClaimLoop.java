package io.workqueue.internal;

import io.workqueue.internal.base.Durations;
import java.time.Duration;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.publisher.FluxSink;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/**
 * The one claim loop, shared by {@code claimStream} ({@link DemandPacedClaims}) and {@code process}
 * ({@link Worker}): run a round (a statement that may lease items), and after a short claim wait for
 * work, after a transient failure back off, until cancelled or failed for good. Subclasses decide
 * what a round is and what its result means; this class owns the states and the order of events.
 *
 * <p><b>One state, one thread at a time.</b> Everything that can happen — downstream demand or
 * cancellation, a statement's result, a wait or back-off ending, a handler finishing — is queued as
 * an event and run by whichever thread finds the loop idle ({@link #signal}), one event after
 * another. The state and every field a subclass touches from its hooks are therefore confined to
 * that serial execution and need no further locking. An event that throws terminates the stream
 * with that error rather than leaving the loop wedged.
 *
 * <pre>
 *   IDLE ──round due──▶ RUNNING ──ok, full──▶ IDLE
 *                          │ ──ok, short──▶ WAITING ──work or urgent round──▶ IDLE / RUNNING
 *                          │ ──transient──▶ BACKING_OFF ──delay──▶ IDLE
 *                          └ ──permanent──▶ STOPPED (logged at ERROR)
 * </pre>
 *
 * <p>A round that has not answered within the loop's round timeout (the lease its claim takes) is
 * abandoned and counts as a transient failure, so the loop backs off and tries again. Its answer
 * could only hand out leases that had lapsed by the time it came, and a connection that went
 * half-open (a network cut: no reset, no error, nothing) gives no other sign until the operating
 * system gives up on it, which by Linux's defaults takes about a quarter of an hour. Abandoning the
 * round cancels its statement, which closes the connection rather than handing it back to a pool.
 * A round carrying acknowledgements keeps them for the next round: completing is idempotent.
 *
 * <p>At most one round, wait or back-off is in flight per subscription. Cancellation disposes a
 * wait or a back-off, and a round that carries nothing but a claim (its statement is cancelled on
 * the server, so nothing is leased); a round carrying acknowledgements runs to its end. After
 * cancellation the subclass is still asked for rounds, so it can acknowledge what is still
 * finishing; {@code STOPPED} is final.
 *
 * @param <R> what a round's statement emits
 */
abstract class ClaimLoop<R> {
    private static final Logger log = LoggerFactory.getLogger(ClaimLoop.class);

    /** Where the loop stands; each state has at most one step (statement, wait, delay) in flight. */
    enum State { IDLE, RUNNING, WAITING, BACKING_OFF, STOPPED }

    /**
     * A statement to run. {@code cancellable} rounds carry nothing that would be lost if the
     * statement were cancelled (a plain claim), so cancelling the stream cancels them.
     */
    record Round<R>(Mono<R> statement, boolean cancellable) {}

    protected final String name;
    protected final FluxSink<?> sink;
    private final Duration minBackoff;
    private final Duration maxBackoff;
    private final Duration roundTimeout;
    private final Scheduler timer;
    /**
     * Every event already queued first, then one decision ({@link #advance}): handlers that
     * finished together are acknowledged by one round, not one round each. A failure (a bug here,
     * or downstream code throwing from onNext) stops the loop rather than leaving it wedged.
     */
    private final SerialEvents events = new SerialEvents(this::advance, this::stop);

    // Confined to the serial execution of events.
    private State state = State.IDLE;
    private @Nullable Disposable step;
    private boolean stepCancellable;
    /** Bumped whenever a step is abandoned, so late signals from it are recognised and dropped. */
    private long generation;
    private int failures;

    ClaimLoop(String name, FluxSink<?> sink, Duration minBackoff, Duration maxBackoff, Duration roundTimeout,
            Scheduler timer) {
        this.name = name;
        this.sink = sink;
        this.minBackoff = minBackoff;
        this.maxBackoff = maxBackoff;
        this.roundTimeout = Durations.capped(roundTimeout); // a lease meaning "forever" must not overflow the timer
        this.timer = timer;
    }

    /** Wires the sink's signals into the loop and looks for a first round. Call once. */
    final void start() {
        sink.onRequest(n -> signal(() -> {}));
        sink.onCancel(() -> signal(this::cancel));
        signal(() -> {});
    }

    // ---------------------------------------------------------------- what subclasses decide

    /**
     * The round to run now, or {@code null} if none is due. While {@code waiting} for work only an
     * urgent round should be returned (one the wait must not delay); it ends the wait.
     */
    abstract @Nullable Round<R> nextRound(boolean waiting);

    /** A round's statement emitted {@code result}; returns whether to wait for work before the next. */
    abstract boolean roundSucceeded(R result);

    /** A round's statement failed with {@code error}; restore whatever the round carried. */
    abstract void roundFailed(Throwable error);

    /** Completes when it is worth claiming again after a short claim. */
    abstract Mono<?> awaitWork();

    /**
     * Runs after each run of queued events, in every state but {@code STOPPED}, before the next
     * round is considered; for work that needs no round.
     */
    void afterEvent() {}

    // ---------------------------------------------------------------- what subclasses may use

    /** Runs {@code event} in the loop's serial execution, now or right after the current event. */
    final void signal(Runnable event) {
        events.run(event);
    }

    /**
     * Whether downstream has cancelled; claiming then stops for good. Asks the sink rather than
     * waiting for the cancel event: that event can arrive after others already queued, and a claim
     * must not start meanwhile.
     */
    final boolean cancelled() {
        return sink.isCancelled();
    }

    /**
     * Stops claiming without cancelling downstream, for a graceful stop: abandons what cancellation
     * abandons (a wait, a back-off, a round carrying nothing but a claim). A round carrying
     * acknowledgements runs to its end. The subclass must return no more claims from then on.
     */
    final void abandonClaims() {
        if (state == State.WAITING || state == State.BACKING_OFF || (state == State.RUNNING && stepCancellable)) {
            abandonStep();
            state = State.IDLE;
        }
    }

    /** Completes the stream, once a graceful stop has settled everything; nothing runs afterwards. */
    final void finish() {
        if (state == State.STOPPED) {
            return;
        }
        abandonStep();
        state = State.STOPPED;
        sink.complete();
    }

    /**
     * Ends the stream with {@code error}, and says so at ERROR; nothing runs afterwards. Logged
     * here rather than left to the subscriber, which may drop the error or never look: a fleet
     * whose workers stop one by one must be told why.
     */
    final void stop(Throwable error) {
        if (state == State.STOPPED) {
            log.debug("claim loop on queue {} already stopped; dropping", name, error);
            return;
        }
        abandonStep();
        state = State.STOPPED;
        if (cancelled()) {
            log.error("claim loop on queue {} failed after its subscriber cancelled, and stopped; what it"
                    + " had not acknowledged will lapse: {}", name, error.toString(), error);
        } else {
            log.error("claim loop on queue {} stopped, ending its stream with a failure it does not retry: {}",
                    name, error.toString(), error);
        }
        sink.error(error);
    }

    // ---------------------------------------------------------------- the machine

    private void advance() {
        if (state == State.STOPPED) {
            return;
        }
        afterEvent();
        if (state != State.IDLE && state != State.WAITING) {
            return;
        }
        Round<R> round = nextRound(state == State.WAITING);
        if (round == null) {
            return;
        }
        abandonStep(); // ends a wait the urgent round cuts short
        state = State.RUNNING;
        stepCancellable = round.cancellable();
        // single(): a statement that emits nothing is a failure, not a silent stop.
        step = round.statement().single()
                .timeout(roundTimeout, Mono.error(() -> new RoundTimeoutException(name, roundTimeout)), timer)
                .subscribe(
                whileCurrent(State.RUNNING, result -> {
                    failures = 0;
                    boolean waitForWork = roundSucceeded(result);
                    if (state == State.RUNNING) {
                        state = State.IDLE;
                        if (waitForWork && !cancelled()) {
                            startWait();
                        }
                    }
                }),
                whileCurrent(State.RUNNING, error -> {
                    roundFailed(error);
                    failed(error);
                }));
    }

    private void startWait() {
        state = State.WAITING;
        stepCancellable = true;
        Consumer<Boolean> ended = whileCurrent(State.WAITING, ignored -> state = State.IDLE);
        step = awaitWork().then().subscribe(null, whileCurrent(State.WAITING, this::failed), () -> ended.accept(true));
    }

    /** A round or a wait failed: back off and carry on if it is worth it, else stop. */
    private void failed(Throwable error) {
        if (!SqlStates.isTransient(error)) {
            stop(error);
            return;
        }
        failures++;
        Duration delay = Backoff.jittered(failures, minBackoff, maxBackoff);
        log.warn("claim loop on queue {} failed (attempt {}); retrying in {} ms: {}",
                name, failures, delay.toMillis(), error.toString());
        state = State.BACKING_OFF;
        stepCancellable = true;
        step = Mono.delay(delay, timer).subscribe(
                whileCurrent(State.BACKING_OFF, ignored -> state = State.IDLE),
                // Only a disposed timer fails a delay: stop rather than back off forever.
                whileCurrent(State.BACKING_OFF, this::stop));
    }

    /**
     * A signal handler for the step being started in {@code expected}: it queues {@code then} as an
     * event that runs only while that step is still the current one (not abandoned by a
     * cancellation or an urgent round), and marks the step finished first.
     */
    private <T> Consumer<T> whileCurrent(State expected, Consumer<T> then) {
        long id = generation;
        return value -> signal(() -> {
            if (id == generation && state == expected) {
                step = null;
                then.accept(value);
            }
        });
    }

    /** Downstream cancelled: abandon what can be abandoned; {@link #cancelled()} now says so. */
    private void cancel() {
        abandonClaims();
    }

    /** Disposes the step in flight, if any, and makes any signal it still sends stale. */
    private void abandonStep() {
        generation++;
        Disposable current = step;
        step = null;
        if (current != null) {
            current.dispose();
        }
    }
}
