package io.workqueue.nomicrometer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * Runs in its own Failsafe execution with Micrometer removed from the classpath (see pom.xml):
 * the library must load and work without its optional dependency.
 */
class NoMicrometerIT {
    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    @Test
    void theQueueWorksWithoutMicrometerOnTheClasspath() {
        assertThrows(ClassNotFoundException.class, () -> Class.forName("io.micrometer.core.instrument.MeterRegistry"),
                "this test only means something when Micrometer is really absent");
        String prefix = TestDatabase.createTable();
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(TestDatabase.pool(), String.class)
                .config(WorkQueueConfig.builder(TestDatabase.uniqueName("no-micrometer")).tablePrefix(prefix).build())
                .build();
        queue.enqueueKeys("x").block(TIMEOUT);
        assertEquals(1, queue.claim(1, Duration.ofMinutes(1)).block(TIMEOUT).size());
        assertEquals(1L, queue.complete("x").block(TIMEOUT));
        assertEquals(1L, queue.stats().block(TIMEOUT).completed());
    }
}
