package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.testing.Queues;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Record keys with {@code Set} components through the default JSON codec: equal keys are one row
 * whatever order their sets were built in, and come back equal.
 */
class SetKeysIT {
    private static final Duration WAIT = Duration.ofSeconds(10);

    /** A key whose identity includes an unordered collection. */
    record Report(String tenant, Set<String> regions) {}

    @Test
    void equalKeysWhoseSetsWereBuiltInDifferentOrdersAreOneRow() {
        String prefix = TestDatabase.createTable();
        ReactiveWorkQueue<Report> queue = ReactiveWorkQueue.builder(TestDatabase.pool(), Report.class)
                .config(WorkQueueConfig.builder(TestDatabase.uniqueName("sets")).tablePrefix(prefix).build())
                .build();
        Report eastFirst = new Report("acme", new LinkedHashSet<>(List.of("us-east", "eu-west", "ap-south")));
        Report southFirst = new Report("acme", new LinkedHashSet<>(List.of("ap-south", "us-east", "eu-west")));
        assertEquals(eastFirst, southFirst);

        queue.enqueueKeys(eastFirst).block(WAIT);
        queue.enqueueKeys(southFirst).block(WAIT);

        assertEquals(1L, Queues.rows(prefix, queue), "one logical key, one row");
        List<Item<Report>> claimed = queue.claim(10, Duration.ofMinutes(1)).block(WAIT);
        assertEquals(List.of(eastFirst), claimed.stream().map(Item::key).toList());
        assertEquals(1L, queue.complete(southFirst).block(WAIT), "either spelling completes the one item");
    }
}
