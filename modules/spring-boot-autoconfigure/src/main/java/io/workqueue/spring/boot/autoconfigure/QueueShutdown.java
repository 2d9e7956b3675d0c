package io.workqueue.spring.boot.autoconfigure;

import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.context.SmartLifecycle;

/**
 * Closes, in phase {@link WorkQueuePhases#QUEUES} (after the workers have stopped and the web server
 * has stopped taking requests): first any worker still settling is cancelled, then every queue the
 * starter created flushes its pending enqueues and completes and is closed, and only then are the
 * notification listeners closed, releasing their connections. The R2DBC pool is disposed after
 * this, when Spring destroys the beans. Nothing here blocks; Spring waits for the callback up to
 * {@code spring.lifecycle.timeout-per-shutdown-phase}. Thread-safe.
 */
final class QueueShutdown implements SmartLifecycle {
    private static final Logger log = LoggerFactory.getLogger(QueueShutdown.class);

    private final QueueFactory queues;
    private final NotificationListeners listeners;
    private final ObjectProvider<QueueWorkers> workers;
    private final AtomicBoolean running = new AtomicBoolean();

    QueueShutdown(QueueFactory queues, NotificationListeners listeners, ObjectProvider<QueueWorkers> workers) {
        this.queues = queues;
        this.listeners = listeners;
        this.workers = workers;
    }

    @Override
    public void start() {
        running.set(true);
    }

    @Override
    public void stop(Runnable callback) {
        if (!running.compareAndSet(true, false)) {
            callback.run();
            return;
        }
        workers.ifAvailable(QueueWorkers::abandon);
        queues.closeAll()
                .then(listeners.close())
                .subscribe(null, error -> {
                    log.warn("closing the work queues failed", error);
                    callback.run();
                }, () -> {
                    log.info("work queues flushed and closed; notification listeners closed");
                    callback.run();
                });
    }

    /** Starts closing without waiting; {@link #stop(Runnable)} is what Spring calls. */
    @Override
    public void stop() {
        stop(() -> {});
    }

    @Override
    public boolean isRunning() {
        return running.get();
    }

    @Override
    public int getPhase() {
        return WorkQueuePhases.QUEUES;
    }
}
