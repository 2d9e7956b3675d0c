package io.workqueue.examples.webflux;

import java.time.Duration;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code workqueue.*} settings; {@code application.properties} holds the defaults.
 *
 * @param r2dbcUrl      the PostgreSQL server as an R2DBC URL; defaults to {@code WORKQUEUE_R2DBC_URL},
 *                      and when empty the service starts an embedded PostgreSQL
 * @param poolSize      connections in the pool the queue borrows from
 * @param queueName     the logical queue
 * @param tablePrefix   the queue table's prefix
 * @param notifyChannel the LISTEN/NOTIFY channel that wakes idle workers when tiles are enqueued
 * @param worker        how the background worker claims, renders and acknowledges
 */
@ConfigurationProperties("workqueue")
record WorkQueueProperties(
        @Nullable String r2dbcUrl,
        int poolSize,
        String queueName,
        String tablePrefix,
        String notifyChannel,
        Worker worker) {

    /**
     * @param concurrency     tiles rendered at once; also the most items claimed ahead of rendering
     * @param lease           how long a claim holds a tile before another worker may take it over
     * @param poll            how long an idle worker waits for a wakeup before claiming again
     * @param batchSize       the most tiles acknowledged by one complete statement
     * @param batchWindow     how long a partial batch waits for more tiles before it is acknowledged
     * @param backoff         delay before a failed tile is retried, doubled on each further attempt
     * @param maxBackoff      the ceiling of that delay
     * @param failureRate     the share of simulated renders that fail (0 to 1)
     * @param shutdownTimeout how long shutdown waits for in-flight renders to finish
     */
    record Worker(
            int concurrency,
            Duration lease,
            Duration poll,
            int batchSize,
            Duration batchWindow,
            Duration backoff,
            Duration maxBackoff,
            double failureRate,
            Duration shutdownTimeout) {}
}
