package io.workqueue;

import org.jspecify.annotations.Nullable;

/**
 * The root of every exception this library raises itself.
 *
 * <p>Database errors that are not retried surface as the driver's {@code R2dbcException}, either
 * directly or as the cause of a {@code WorkQueueException}.
 */
public class WorkQueueException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates an exception with a message.
     *
     * @param message what went wrong, naming the queue or setting concerned
     */
    public WorkQueueException(String message) {
        super(message);
    }

    /**
     * Creates an exception with a message and the failure that caused it.
     *
     * @param message what went wrong, naming the queue or setting concerned
     * @param cause   the underlying failure (often the driver's {@code R2dbcException}), or
     *                {@code null}
     */
    public WorkQueueException(String message, @Nullable Throwable cause) {
        super(message, cause);
    }
}
