package io.workqueue.notify;

import io.workqueue.WorkQueueException;

/**
 * A notification sent on the listener's channel from another session did not reach the listener
 * in time: its {@code LISTEN} session does not receive what others send. The usual cause is a
 * listener connected through a transaction-mode pooler (PgBouncer), where {@code LISTEN} stays on
 * whichever server connection ran it while notifications go to whoever holds that connection. The
 * queue still works (the poll is the backstop), only without the low latency notifications buy.
 */
public class NotificationDeliveryException extends WorkQueueException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception with a message naming the channel and the wait.
     *
     * @param message names the channel and how long the probe was awaited
     */
    public NotificationDeliveryException(String message) {
        super(message);
    }
}
