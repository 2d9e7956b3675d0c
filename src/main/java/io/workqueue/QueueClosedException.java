package io.workqueue;

/** An enqueue arrived after {@link ReactiveWorkQueue#close()}; its keys were not written. */
public class QueueClosedException extends WorkQueueException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception with a message naming the queue.
     *
     * @param message names the closed queue
     */
    public QueueClosedException(String message) {
        super(message);
    }
}
