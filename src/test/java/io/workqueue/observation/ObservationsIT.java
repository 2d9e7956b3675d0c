package io.workqueue.observation;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.tck.TestObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistryAssert;
import io.r2dbc.spi.Connection;
import io.workqueue.Entry;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkQueueMeters;
import io.workqueue.WorkerOptions;
import io.workqueue.testing.ExpectedLogs;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import reactor.core.publisher.Mono;

/**
 * Each operation of a queue given an {@code ObservationRegistry} makes its observation, named as
 * {@link WorkQueueObservations} documents, with the queue and the outcome as low-cardinality key
 * values and keys and counts as high-cardinality ones; the outcome is set as the observation
 * stops, and the test kit's registry refuses an observation stopped twice or used after it
 * stopped. And the lag meters.
 */
@ExtendWith(ExpectedLogs.class)
class ObservationsIT {
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private static final Duration LEASE = Duration.ofMinutes(1);

    private static ReactiveWorkQueue<String> queue(String prefix, String name, TestObservationRegistry registry) {
        return ReactiveWorkQueue.builder(TestDatabase.pool(), String.class)
                .config(WorkQueueConfig.builder(name).tablePrefix(prefix).build())
                .observationRegistry(registry)
                .build();
    }

    @Test
    void eachOperationEmitsItsObservationWithTheDocumentedNamesAndKeyValues() {
        String prefix = TestDatabase.createTable();
        String name = TestDatabase.uniqueName("observed");
        TestObservationRegistry registry = TestObservationRegistry.create();
        ReactiveWorkQueue<String> queue = queue(prefix, name, registry);

        queue.enqueueKeys("a").block(TIMEOUT);
        queue.enqueue(List.of(Entry.of("b"), Entry.of("c"), Entry.of("d"))).block(TIMEOUT);
        List<Item<String>> claimed = queue.claim(2, LEASE).block(TIMEOUT);
        assertEquals(2, claimed.size());
        queue.complete("a").block(TIMEOUT);
        queue.release(Duration.ZERO, new IllegalStateException("boom"), "b").block(TIMEOUT);

        TestObservationRegistryAssert.assertThat(registry)
                .hasNumberOfObservationsWithNameEqualTo(WorkQueueObservations.ENQUEUE, 2)
                .forAllObservationsWithNameEqualTo(WorkQueueObservations.ENQUEUE, observation -> observation
                        .hasContextualNameEqualTo("enqueue " + name)
                        .hasLowCardinalityKeyValue(WorkQueueObservations.QUEUE, name)
                        .hasLowCardinalityKeyValue(WorkQueueObservations.OUTCOME, WorkQueueObservations.OUTCOME_SUCCESS)
                        .hasLowCardinalityKeyValue(WorkQueueObservations.ENQUEUE_MODE, WorkQueueObservations.MODE_GROUP)
                        .doesNotHaveLowCardinalityKeyValueWithKey(WorkQueueObservations.KEY))
                .hasAnObservation(observation -> observation.hasNameEqualTo(WorkQueueObservations.ENQUEUE)
                        .hasHighCardinalityKeyValue(WorkQueueObservations.KEY, "a")
                        .hasHighCardinalityKeyValue(WorkQueueObservations.ITEMS, "1"))
                .hasAnObservation(observation -> observation.hasNameEqualTo(WorkQueueObservations.ENQUEUE)
                        .hasHighCardinalityKeyValue(WorkQueueObservations.ITEMS, "3")
                        .doesNotHaveHighCardinalityKeyValueWithKey(WorkQueueObservations.KEY))
                .forAllObservationsWithNameEqualTo(WorkQueueObservations.ENQUEUE_WRITE, observation -> observation
                        .hasLowCardinalityKeyValue(WorkQueueObservations.QUEUE, name)
                        .hasLowCardinalityKeyValue(WorkQueueObservations.OUTCOME, WorkQueueObservations.OUTCOME_SUCCESS)
                        .hasHighCardinalityKeyValue(WorkQueueObservations.CALLERS, "1")
                        .doesNotHaveParentObservation())
                .hasNumberOfObservationsWithNameEqualTo(WorkQueueObservations.ENQUEUE_WRITE, 2)
                .hasObservationWithNameEqualTo(WorkQueueObservations.CLAIM).that()
                        .hasLowCardinalityKeyValue(WorkQueueObservations.QUEUE, name)
                        .hasLowCardinalityKeyValue(WorkQueueObservations.OUTCOME, WorkQueueObservations.OUTCOME_SUCCESS)
                        .hasHighCardinalityKeyValue(WorkQueueObservations.ITEMS, "2")
                        .hasHighCardinalityKeyValue(WorkQueueObservations.CLAIMED, "2");
        TestObservationRegistryAssert.assertThat(registry)
                .hasObservationWithNameEqualTo(WorkQueueObservations.COMPLETE).that()
                        .hasLowCardinalityKeyValue(WorkQueueObservations.QUEUE, name)
                        .hasLowCardinalityKeyValue(WorkQueueObservations.OUTCOME, WorkQueueObservations.OUTCOME_SUCCESS)
                        .hasHighCardinalityKeyValue(WorkQueueObservations.KEY, "a");
        TestObservationRegistryAssert.assertThat(registry)
                .hasObservationWithNameEqualTo(WorkQueueObservations.RELEASE).that()
                        .hasLowCardinalityKeyValue(WorkQueueObservations.OUTCOME, WorkQueueObservations.OUTCOME_SUCCESS)
                        .hasHighCardinalityKeyValue(WorkQueueObservations.KEY, "b");
    }

    @Test
    void aTransactionalEnqueueIsObservedAsSuch() {
        String prefix = TestDatabase.createTable();
        String name = TestDatabase.uniqueName("observed-tx");
        TestObservationRegistry registry = TestObservationRegistry.create();
        ReactiveWorkQueue<String> queue = queue(prefix, name, registry);

        Mono.usingWhen(Mono.from(TestDatabase.pool().create()),
                        (Connection connection) -> Mono.from(connection.beginTransaction())
                                .then(queue.enqueue(connection, List.of(Entry.of("t"))))
                                .then(Mono.from(connection.commitTransaction())),
                        Connection::close)
                .block(TIMEOUT);

        TestObservationRegistryAssert.assertThat(registry)
                .hasNumberOfObservationsWithNameEqualTo(WorkQueueObservations.ENQUEUE_WRITE, 0)
                .hasObservationWithNameEqualTo(WorkQueueObservations.ENQUEUE).that()
                        .hasLowCardinalityKeyValue(WorkQueueObservations.ENQUEUE_MODE,
                                WorkQueueObservations.MODE_TRANSACTIONAL)
                        .hasHighCardinalityKeyValue(WorkQueueObservations.KEY, "t");
    }

    @Test
    void processObservesEachHandlerRunAndItsAcknowledgementWithItsOutcome() {
        String prefix = TestDatabase.createTable();
        String name = TestDatabase.uniqueName("observed-process");
        TestObservationRegistry registry = TestObservationRegistry.create();
        ReactiveWorkQueue<String> queue = queue(prefix, name, registry);
        queue.enqueueKeys("fine", "broken").block(TIMEOUT);

        List<Item<String>> done = queue.process(
                        item -> item.key().equals("broken") ? Mono.error(new IllegalStateException("no")) : Mono.empty(),
                        WorkerOptions.builder().concurrency(2).lease(LEASE).poll(Duration.ofMillis(50))
                                .backoff(attempts -> Duration.ofHours(1)).build())
                .take(1)
                .collectList()
                .block(TIMEOUT);
        assertEquals("fine", done.get(0).key());

        TestObservationRegistryAssert.assertThat(registry)
                .hasNumberOfObservationsWithNameEqualTo(WorkQueueObservations.HANDLE, 2)
                .hasAnObservation(observation -> observation.hasNameEqualTo(WorkQueueObservations.HANDLE)
                        .hasContextualNameEqualTo("handle " + name)
                        .hasLowCardinalityKeyValue(WorkQueueObservations.QUEUE, name)
                        .hasLowCardinalityKeyValue(WorkQueueObservations.OUTCOME, WorkQueueObservations.OUTCOME_SUCCESS)
                        .hasHighCardinalityKeyValue(WorkQueueObservations.KEY, "fine")
                        .hasHighCardinalityKeyValue(WorkQueueObservations.ATTEMPTS, "1")
                        .doesNotHaveParentObservation())
                .hasAnObservation(observation -> observation.hasNameEqualTo(WorkQueueObservations.HANDLE)
                        .hasLowCardinalityKeyValue(WorkQueueObservations.OUTCOME, WorkQueueObservations.OUTCOME_FAILURE)
                        .hasHighCardinalityKeyValue(WorkQueueObservations.KEY, "broken")
                        .assertThatError().hasMessage("no"))
                .hasAnObservation(observation -> observation.hasNameEqualTo(WorkQueueObservations.RELEASE)
                        .hasHighCardinalityKeyValue(WorkQueueObservations.KEY, "broken"))
                .hasAnObservation(observation -> observation.hasNameEqualTo(WorkQueueObservations.COMPLETE)
                        .hasHighCardinalityKeyValue(WorkQueueObservations.KEY, "fine"))
                .hasAnObservation(observation -> observation.hasNameEqualTo(WorkQueueObservations.CLAIM));
    }

    @Test
    void theLagTheTimeToCompletionAndTheLongestLiveLeaseAreMeasuredOnTheDatabaseClock() {
        String prefix = TestDatabase.createTable();
        String name = TestDatabase.uniqueName("lag");
        MeterRegistry meters = new SimpleMeterRegistry();
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(TestDatabase.pool(), String.class)
                .config(WorkQueueConfig.builder(name).tablePrefix(prefix).build())
                .meterRegistry(meters)
                .build();
        String table = io.workqueue.migrations.WorkQueueMigrations.tableName(prefix);
        queue.enqueueKeys("old", "new").block(TIMEOUT);
        // "old" has been claimable for an hour; "new" only just.
        TestDatabase.execute("UPDATE " + table + " SET available_at = now() - INTERVAL '1 hour'"
                + " WHERE queue_name = '" + name + "' AND item_key = 'old'");
        assertEquals(2, queue.claim(10, LEASE).block(TIMEOUT).size());
        var lag = meters.get(WorkQueueMeters.CLAIM_LAG).tag(WorkQueueMeters.QUEUE_TAG, name).timer();
        assertEquals(2, lag.count());
        assertTrue(lag.max(TimeUnit.SECONDS) >= 3600, () -> "max lag " + lag.max(TimeUnit.SECONDS));
        assertTrue(lag.max(TimeUnit.SECONDS) < 3700);

        // Claimed ten minutes ago, as the database has it.
        TestDatabase.execute("UPDATE " + table + " SET claimed_at = now() - INTERVAL '10 minutes'"
                + " WHERE queue_name = '" + name + "' AND item_key = 'old'");
        queue.stats().block(TIMEOUT);
        double longest = meters.get(WorkQueueMeters.LEASE_LONGEST).tag(WorkQueueMeters.QUEUE_TAG, name).gauge().value();
        assertTrue(longest >= 600 && longest < 700, () -> "longest lease " + longest);

        assertEquals(1L, queue.complete("old").block(TIMEOUT));
        var held = meters.get(WorkQueueMeters.CLAIM_TO_COMPLETION).tag(WorkQueueMeters.QUEUE_TAG, name).timer();
        assertEquals(1, held.count());
        assertTrue(held.max(TimeUnit.SECONDS) >= 600, () -> "held " + held.max(TimeUnit.SECONDS));
        // Through completeAndClaim too, as process() acknowledges.
        queue.completeAndClaim(List.of("new"), 1, LEASE).block(TIMEOUT);
        assertEquals(2, held.count());
        queue.stats().block(TIMEOUT);
        assertEquals(0.0, meters.get(WorkQueueMeters.LEASE_LONGEST).tag(WorkQueueMeters.QUEUE_TAG, name).gauge().value(),
                "nothing leased");
    }
}
