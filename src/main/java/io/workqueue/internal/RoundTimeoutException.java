package io.workqueue.internal;

import io.workqueue.WorkQueueException;
import java.time.Duration;

/**
 * A claim loop's round had no answer within the loop's round timeout and was abandoned: the
 * connection it ran on may be half-open. Transient ({@link SqlStates#isTransient}): the loop backs
 * off and runs another round on another connection. Never reaches a subscriber.
 */
final class RoundTimeoutException extends WorkQueueException {
    private static final long serialVersionUID = 1L;

    RoundTimeoutException(String queue, Duration timeout) {
        super("a round of the claim loop on queue " + queue + " had no answer within " + timeout
                + ", the lease its claim takes, and was abandoned: the database is that slow, or the"
                + " connection is half-open (a network cut)");
    }
}
