package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkQueueMeters;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import org.junit.jupiter.api.Test;

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
        assertEquals(1L, registry.get(WorkQueueMeters.ENQUEUE_FLUSH_LATENCY).tag(WorkQueueMeters.QUEUE_TAG, name).timer().count());
        assertEquals(2.0, gauge(registry, WorkQueueMeters.DEPTH, name), "b released and d leased are pending");
        assertEquals(1.0, gauge(registry, WorkQueueMeters.READY, name), "b is ready again");
        assertEquals(0.0, gauge(registry, WorkQueueMeters.STALLED, name));
        assertTrue(gauge(registry, WorkQueueMeters.OLDEST_READY_AGE, name) >= 0.0);
    }

    private static double count(MeterRegistry registry, String meter, String queue) {
        return registry.get(meter).tag(WorkQueueMeters.QUEUE_TAG, queue).counter().count();
    }

    private static double gauge(MeterRegistry registry, String meter, String queue) {
        return registry.get(meter).tag(WorkQueueMeters.QUEUE_TAG, queue).gauge().value();
    }
}
