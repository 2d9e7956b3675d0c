package io.workqueue;

import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * A group-committed write (an enqueue, or a merged {@code complete}) did not report its commit
 * within {@link WorkQueueConfig#enqueueTimeout()}. Unlike a refused write, the outcome is
 * <em>unknown</em>: the statement was cancelled on the server, but it may have committed before the
 * cancel arrived. Enqueues and completes are idempotent, so the usual answer is to run the call
 * again; the worker started by {@link ReactiveWorkQueue#process} does exactly that with the
 * acknowledgements it holds.
 */
public class WriteTimeoutException extends WorkQueueException {
    private static final long serialVersionUID = 1L;

    private final transient Duration timeout;

    /** Creates the exception for a write that outlived {@code timeout}. */
    public WriteTimeoutException(String message, Duration timeout, @Nullable Throwable cause) {
        super(message, cause);
        this.timeout = timeout;
    }

    /** The bound the write outlived. */
    public Duration timeout() {
        return timeout;
    }
}
