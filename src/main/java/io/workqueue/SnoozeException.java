package io.workqueue;

import java.time.Duration;
import java.util.Objects;

/**
 * What a handler of {@link ReactiveWorkQueue#process} fails with to say "not ready yet" rather than
 * "failed": the worker then {@linkplain ReactiveWorkQueue#snooze snoozes} the item for
 * {@link #delay()} instead of releasing it, so the attempt is not counted, the back-off and
 * {@link WorkQueueConfig#maxAttempts()} do not apply, and no last error is recorded. For a
 * rate-limited upstream or a dependency not there yet:
 *
 * <pre>{@code
 * queue.process(item -> upstream.call(item.key())
 *         .onErrorMap(TooManyRequests.class, e -> new SnoozeException(e.retryAfter())), options)
 * }</pre>
 *
 * <p>Not a {@link WorkQueueException}: nothing went wrong. It carries no stack trace. If the
 * snooze finds the lease no longer the worker's, nothing happens to the item (its new holder has
 * it); if the snooze fails, its lease lapses as after any failed release.
 */
public final class SnoozeException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** How long the item waits before it is due again. */
    private final Duration delay;

    /**
     * Snoozes the handler's item for {@code delay}.
     *
     * @param delay how long until the item is due again; zero or more, at most
     *              {@link ReactiveWorkQueue#MAX_DURATION}
     * @throws NullPointerException     if {@code delay} is {@code null}
     * @throws IllegalArgumentException if {@code delay} is negative or over {@code MAX_DURATION}
     */
    public SnoozeException(Duration delay) {
        // No suppression and no stack trace: it is thrown as often as work is not ready.
        super("snoozed for " + Objects.requireNonNull(delay, "delay"), null, false, false);
        if (delay.isNegative() || delay.compareTo(ReactiveWorkQueue.MAX_DURATION) > 0) {
            throw new IllegalArgumentException("a snooze's delay must be between zero and "
                    + ReactiveWorkQueue.MAX_DURATION + " but was " + delay);
        }
        this.delay = delay;
    }

    /**
     * How long the item waits before it is due again.
     *
     * @return the delay given
     */
    public Duration delay() {
        return delay;
    }
}
