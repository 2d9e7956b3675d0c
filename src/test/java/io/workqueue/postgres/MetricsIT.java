package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkQueueMeters;
import io.workqueue.WriteTimeoutException;
import io.workqueue.internal.SqlStates;
import io.workqueue.testing.Faults;
import io.workqueue.testing.Queues;
import io.workqueue.testing.TableLock;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import io.workqueue.testing.ExpectedLogs;

@ExtendWith(ExpectedLogs.class)
class MetricsIT {
    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    @Test
    void everyOperationIsCountedAndTaggedWithTheQueue() {
        String prefix = TestDatabase.createTable();
        String name = TestDatabase.uniqueName("metrics");
        MeterRegistry registry = new SimpleMeterRegistry();
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(TestDatabase.pool(), String.class)
                .config(WorkQueueConfig.builder(name).tablePrefix(prefix).retention(Duration.ofSeconds(1)).build())
                .meterRegistry(registry)
                .build();

        queue.enqueueKeys("a", "b", "c", "d", "a").block(TIMEOUT);
        assertEquals(4, queue.claim(10, Duration.ofMinutes(1)).block(TIMEOUT).size());
        queue.complete("a").block(TIMEOUT);
        queue.release(Duration.ZERO, null, "b").block(TIMEOUT);
        queue.remove("c").block(TIMEOUT);
        queue.stats().block(TIMEOUT);

        assertEquals(4.0, count(registry, WorkQueueMeters.ENQUEUED, name), "duplicate keys merge before the write");
        assertEquals(4.0, count(registry, WorkQueueMeters.CLAIMED, name));
        assertEquals(0.0, count(registry, WorkQueueMeters.RECLAIMED, name));
        assertEquals(1.0, count(registry, WorkQueueMeters.COMPLETED, name));
        assertEquals(1.0, count(registry, WorkQueueMeters.RELEASED, name));
        assertEquals(1.0, count(registry, WorkQueueMeters.REMOVED, name));
        assertEquals(1L, registry.get(WorkQueueMeters.CLAIM_LATENCY).tag(WorkQueueMeters.QUEUE_TAG, name).timer().count());
        assertEquals(4.0, registry.get(WorkQueueMeters.CLAIM_BATCH_SIZE).tag(WorkQueueMeters.QUEUE_TAG, name).summary().totalAmount());
        assertEquals(1L, flushes(registry, name, WorkQueueMeters.OUTCOME_SUCCESS));
        assertEquals(0L, flushes(registry, name, WorkQueueMeters.OUTCOME_FAILURE), "registered before anything fails");
        assertEquals(0L, flushes(registry, name, WorkQueueMeters.OUTCOME_TIMEOUT));
        assertEquals(2.0, gauge(registry, WorkQueueMeters.DEPTH, name), "b released and d leased are pending");
        assertEquals(1.0, gauge(registry, WorkQueueMeters.READY, name), "b is ready again");
        assertEquals(0.0, gauge(registry, WorkQueueMeters.STALLED, name));
        assertTrue(gauge(registry, WorkQueueMeters.OLDEST_READY_AGE, name) >= 0.0);
    }

    @Test
    void failedAndTimedOutWritesAreTimedByOutcomeWhileTheStallLasts() {
        String prefix = TestDatabase.createTable();
        String name = TestDatabase.uniqueName("metrics-outcome");
        MeterRegistry registry = new SimpleMeterRegistry();
        Duration writeTimeout = Duration.ofMillis(300);
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(TestDatabase.pool(), String.class)
                .config(WorkQueueConfig.builder(name).tablePrefix(prefix).writeTimeout(writeTimeout).build())
                .meterRegistry(registry)
                .build();
        Faults.failKey(prefix, "INSERT", "poison", "P0001");

        RuntimeException refused = assertThrows(RuntimeException.class, () -> queue.enqueueKeys("poison").block(TIMEOUT));
        assertEquals("P0001", SqlStates.sqlState(refused));
        assertEquals(1L, flushes(registry, name, WorkQueueMeters.OUTCOME_FAILURE));

        try (TableLock lock = TableLock.hold(Queues.table(prefix))) {
            assertThrows(WriteTimeoutException.class, () -> queue.enqueueKeys("stalled").block(TIMEOUT));
            // Seen while the table is still locked, not only once the database recovers.
            Timer timedOut = registry.get(WorkQueueMeters.ENQUEUE_FLUSH_LATENCY).tag(WorkQueueMeters.QUEUE_TAG, name)
                    .tag(WorkQueueMeters.OUTCOME_TAG, WorkQueueMeters.OUTCOME_TIMEOUT).timer();
            assertEquals(1L, timedOut.count());
            assertTrue(timedOut.totalTime(TimeUnit.NANOSECONDS) >= writeTimeout.toNanos(), "timed until abandoned");
        }

        queue.enqueueKeys("after").block(TIMEOUT);
        assertEquals(1L, flushes(registry, name, WorkQueueMeters.OUTCOME_SUCCESS));
        assertEquals(1L, flushes(registry, name, WorkQueueMeters.OUTCOME_FAILURE));
        assertEquals(1L, flushes(registry, name, WorkQueueMeters.OUTCOME_TIMEOUT));
        assertEquals(1.0, count(registry, WorkQueueMeters.ENQUEUED, name), "only the committed write counts keys");
        assertEquals(1L, registry.get(WorkQueueMeters.ENQUEUE_FLUSH_SIZE).tag(WorkQueueMeters.QUEUE_TAG, name).summary().count());
    }

    private static long flushes(MeterRegistry registry, String queue, String outcome) {
        return registry.get(WorkQueueMeters.ENQUEUE_FLUSH_LATENCY).tag(WorkQueueMeters.QUEUE_TAG, queue)
                .tag(WorkQueueMeters.OUTCOME_TAG, outcome).timer().count();
    }

    private static double count(MeterRegistry registry, String meter, String queue) {
        return registry.get(meter).tag(WorkQueueMeters.QUEUE_TAG, queue).counter().count();
    }

    private static double gauge(MeterRegistry registry, String meter, String queue) {
        return registry.get(meter).tag(WorkQueueMeters.QUEUE_TAG, queue).gauge().value();
    }
}
