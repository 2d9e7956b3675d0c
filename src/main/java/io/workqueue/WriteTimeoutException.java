package io.workqueue;

import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * A group-committed write (a merged enqueue, complete or claim) did not report its commit within
 * {@link WorkQueueConfig#writeTimeout()}. Unlike a refused write, the outcome is
 * <em>unknown</em>: the statement was cancelled on the server, but it may have committed before the
 * cancel arrived. Enqueues and completes are idempotent, so the usual answer is to run the call
 * again; the worker started by {@link ReactiveWorkQueue#process} does exactly that with the
 * acknowledgements it holds.
 */
public class WriteTimeoutException extends WorkQueueException {
    private static final long serialVersionUID = 1L;

    /** The bound the write outlived; {@code Duration} is serializable, so it survives the trip. */
    private final Duration timeout;

    /**
     * Creates the exception for a write that outlived {@code timeout}.
     *
     * @param message names the queue, the write and the bound
     * @param timeout the bound the write outlived
     * @param cause   the cancellation or failure seen when the bound passed, or {@code null}
     */
    public WriteTimeoutException(String message, Duration timeout, @Nullable Throwable cause) {
        super(message, cause);
        this.timeout = timeout;
    }

    /**
     * The bound the write outlived: {@link WorkQueueConfig#writeTimeout()} of the queue.
     *
     * @return the bound
     */
    public Duration timeout() {
        return timeout;
    }
}
