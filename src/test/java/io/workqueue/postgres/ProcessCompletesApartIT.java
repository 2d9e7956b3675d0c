package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkerOptions;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * {@code process()}'s large rounds complete in a statement of their own and then claim
 * ({@link Leasing#COMPLETE_APART_FROM}); {@code completeAndClaim} keeps its one statement.
 */
class ProcessCompletesApartIT {
    private static final Duration TIMEOUT = Duration.ofSeconds(60);
    private static final Duration LEASE = Duration.ofMinutes(1);
    private static String prefix;

    @BeforeAll
    static void createTable() {
        prefix = TestDatabase.createTable();
    }

    private static PostgresWorkQueue<String> instance(String name) {
        return (PostgresWorkQueue<String>) ReactiveWorkQueue.builder(TestDatabase.pool(), String.class)
                .config(WorkQueueConfig.builder(name).tablePrefix(prefix).build())
                .build();
    }

    /**
     * Two instances drain one queue of many claims' worth of keys: every key runs once and is
     * completed, and both instances' rounds completed apart from their claims.
     */
    @Test
    void aFleetsLargeRoundsCompleteApartAndEveryKeyRunsOnce() {
        String name = TestDatabase.uniqueName("apart");
        PostgresWorkQueue<String> first = instance(name);
        PostgresWorkQueue<String> second = instance(name);
        int n = 2_000;
        List<String> keys = IntStream.range(0, n).mapToObj(i -> String.format("k%05d", i)).toList();
        first.enqueueKeys(keys).block(TIMEOUT);

        Map<String, Integer> runs = new ConcurrentHashMap<>();
        WorkerOptions options = WorkerOptions.builder().concurrency(4 * Leasing.COMPLETE_APART_FROM)
                .claimBatch(4 * Leasing.COMPLETE_APART_FROM).lease(LEASE).build();
        Flux<Item<String>> both = Flux.merge(
                first.process(item -> Mono.fromRunnable(() -> runs.merge(item.key(), 1, Integer::sum)), options),
                second.process(item -> Mono.fromRunnable(() -> runs.merge(item.key(), 1, Integer::sum)), options));
        List<Item<String>> done = both.take(n).collectList().block(TIMEOUT);

        assertEquals(n, done.size());
        assertEquals(n, runs.size(), "every key ran");
        assertTrue(runs.values().stream().allMatch(count -> count == 1), () -> "a key ran twice: " + runs);
        var stats = first.stats().block(TIMEOUT);
        assertEquals(n, stats.completed());
        assertEquals(0, stats.pending());
        assertTrue(first.completedApart() > 0, "the first instance's rounds completed apart");
        assertTrue(second.completedApart() > 0, "the second instance's rounds completed apart");
    }

    /** completeAndClaim promises one statement and one transaction, however many keys it completes. */
    @Test
    void completeAndClaimKeepsItsOneStatementWhateverItsSize() {
        PostgresWorkQueue<String> queue = instance(TestDatabase.uniqueName("apart"));
        int n = 4 * Leasing.COMPLETE_APART_FROM;
        queue.enqueueKeys(IntStream.range(0, 2 * n).mapToObj(i -> String.format("k%05d", i)).toList()).block(TIMEOUT);
        List<String> leased = queue.claim(n, LEASE).block(TIMEOUT).stream().map(Item::key).toList();

        assertEquals(n, queue.completeAndClaim(leased, n, LEASE).block(TIMEOUT).size());
        assertEquals(n, queue.stats().block(TIMEOUT).completed());
        assertEquals(0, queue.completedApart());
    }
}
