package io.workqueue.spring.boot.autoconfigure;

import org.springframework.context.SmartLifecycle;

/**
 * The {@link SmartLifecycle} phases the starter runs in, for applications that order their own
 * lifecycle beans around it. Spring starts phases in ascending order and stops them in descending
 * order, waiting up to {@code spring.lifecycle.timeout-per-shutdown-phase} for each.
 *
 * <p>On shutdown: {@link #WORKERS} stop claiming and settle what they hold (before the web server's
 * graceful shutdown, {@code DEFAULT_PHASE - 1024}); then the web server stops
 * ({@code DEFAULT_PHASE - 2048}), so no request enqueues any more; then {@link #QUEUES} flush pending
 * enqueues and completes, close the queues and, after them, the notification listeners. The R2DBC
 * pool goes last, when Spring destroys the beans.
 */
public final class WorkQueuePhases {
    /** Workers and housekeeping: started after the web server, stopped before it. */
    public static final int WORKERS = SmartLifecycle.DEFAULT_PHASE - 512;

    /** Queues and listeners: closed after the web server has stopped taking requests. */
    public static final int QUEUES = SmartLifecycle.DEFAULT_PHASE - 4096;

    private WorkQueuePhases() {}
}
