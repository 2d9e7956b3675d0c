package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.Stats;
import io.workqueue.WorkQueueConfig;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class QueueBasicsIT {
    private static String prefix;

    @BeforeAll
    static void createTable() {
        prefix = TestDatabase.createTable();
    }

    private static ReactiveWorkQueue<String> queue(String hint) {
        return ReactiveWorkQueue.builder(TestDatabase.pool(), String.class)
                .config(WorkQueueConfig.builder(TestDatabase.uniqueName(hint)).tablePrefix(prefix).build())
                .build();
    }

    @Test
    void anEnqueuedKeyIsClaimedThenCompleted() {
        ReactiveWorkQueue<String> queue = queue("basics");
        queue.enqueueKeys("a", "b").block(Duration.ofSeconds(10));

        List<Item<String>> items = queue.claim(10, Duration.ofMinutes(1)).block(Duration.ofSeconds(10));
        assertEquals(List.of("a", "b"), items.stream().map(Item::key).toList());
        assertTrue(items.stream().allMatch(i -> i.attempts() == 1 && !i.reclaimed()));

        assertEquals(2L, queue.complete("a", "b", "unknown").block(Duration.ofSeconds(10)));
        Stats stats = queue.stats().block(Duration.ofSeconds(10));
        assertEquals(Stats.of(0, 0, 0, 0, 2, Duration.ZERO), stats);
        assertFalse(queue.claim(10, Duration.ofMinutes(1)).block(Duration.ofSeconds(10)).iterator().hasNext());
    }
}
