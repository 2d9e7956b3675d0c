package io.workqueue;

/**
 * The connection factory does not speak PostgreSQL. The queue's guarantees rest on PostgreSQL's
 * {@code SKIP LOCKED}, {@code RETURNING} and server-side interval arithmetic, so it refuses to run
 * on anything else rather than degrade silently.
 */
public class UnsupportedDialectException extends WorkQueueException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception with a message naming the database the factory reported.
     *
     * @param message names the database product the factory reported
     */
    public UnsupportedDialectException(String message) {
        super(message);
    }
}
