package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.r2dbc.spi.R2dbcException;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

class CompleteAndClaimIT {
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private static final Duration LEASE = Duration.ofMinutes(1);
    private static String prefix;

    @BeforeAll
    static void createTable() {
        prefix = TestDatabase.createTable();
    }

    private static ReactiveWorkQueue<String> queue(int writeAttempts) {
        return ReactiveWorkQueue.builder(TestDatabase.pool(), String.class)
                .config(WorkQueueConfig.builder(TestDatabase.uniqueName("cac")).tablePrefix(prefix)
                        .writeAttempts(writeAttempts).build())
                .build();
    }

    private static List<String> keys(List<Item<String>> items) {
        return items.stream().map(Item::key).toList();
    }

    @Test
    void completesTheFinishedKeysAndLeasesTheNextBatchInOneStatement() {
        ReactiveWorkQueue<String> queue = queue(3);
        queue.enqueueKeys("a", "b", "c", "d", "e").block(TIMEOUT);
        assertEquals(List.of("a", "b"), keys(queue.claim(2, LEASE).block(TIMEOUT)));

        List<Item<String>> next = queue.completeAndClaim(List.of("a", "b"), 2, LEASE).block(TIMEOUT);
        assertEquals(List.of("c", "d"), keys(next));
        var stats = queue.stats().block(TIMEOUT);
        assertEquals(2, stats.completed());
        assertEquals(2, stats.leased());
        assertEquals(1, stats.ready());
    }

    @Test
    void neverReclaimsAKeyItIsCompletingEvenWhenItsLeaseLapsed() {
        ReactiveWorkQueue<String> queue = queue(3);
        queue.enqueueKeys("a", "b").block(TIMEOUT);
        assertEquals(List.of("a"), keys(queue.claim(1, Duration.ofMillis(50)).block(TIMEOUT)));
        // Wait until the database says a's lease has lapsed: a is ready again.
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (queue.stats().block(TIMEOUT).ready() < 2) {
            assertTrue(System.nanoTime() < deadline, "a's lease never lapsed");
        }
        // a sorts first and is due, yet the statement completing it must not hand it out again.
        List<Item<String>> next = queue.completeAndClaim(List.of("a"), 10, LEASE).block(TIMEOUT);
        assertEquals(List.of("b"), keys(next));
        assertEquals(1, queue.stats().block(TIMEOUT).completed());
    }

    @Test
    void withNothingToCompleteItIsAClaim() {
        ReactiveWorkQueue<String> queue = queue(3);
        queue.enqueueKeys("x").block(TIMEOUT);
        assertEquals(List.of("x"), keys(queue.completeAndClaim(List.of(), 5, LEASE).block(TIMEOUT)));
        assertEquals(List.of(), queue.completeAndClaim(List.of("x"), 5, LEASE).block(TIMEOUT));
        assertEquals(1, queue.stats().block(TIMEOUT).completed());
    }

    @Test
    void argumentErrorsArriveAtSubscription() {
        ReactiveWorkQueue<String> queue = queue(3);
        Mono<List<Item<String>>> badLease = queue.completeAndClaim(List.of("a"), 1, Duration.ZERO);
        StepVerifier.create(badLease).expectError(IllegalArgumentException.class).verify(TIMEOUT);
        StepVerifier.create(queue.completeAndClaim(null, 1, LEASE)).expectError(NullPointerException.class).verify(TIMEOUT);
    }

    /**
     * Workers acknowledging through completeAndClaim while writers complete and release the same
     * keys in shuffled batches: with one write attempt, any 40P01 would surface. Every key ends
     * completed.
     */
    @Test
    void concurrentWorkersAndWritersNeverDeadlock() {
        ReactiveWorkQueue<String> queue = queue(1);
        List<String> all = IntStream.range(0, 2_000).mapToObj(i -> String.format("k%05d", i)).toList();
        queue.enqueueKeys(all).block(TIMEOUT);
        Map<String, Integer> claims = new ConcurrentHashMap<>();
        Set<String> deadlocks = ConcurrentHashMap.newKeySet();
        AtomicInteger rounds = new AtomicInteger();

        // Each worker: completeAndClaim(previous batch) until a round leases nothing.
        Flux<Void> workers = Flux.range(0, 4).flatMap(w -> Mono.defer(() -> loop(queue, List.of(), claims, rounds)).flux());
        Flux<Void> writers = Flux.range(0, 200).flatMap(i -> {
            List<String> batch = new ArrayList<>(all.subList((i * 37) % 1_900, (i * 37) % 1_900 + 50));
            Collections.shuffle(batch);
            Mono<Long> write = i % 2 == 0 ? queue.complete(batch) : queue.release(Duration.ZERO, null, batch);
            return write.onErrorResume(R2dbcException.class, e -> {
                deadlocks.add(e.getSqlState());
                return Mono.empty();
            }).then();
        }, 4);
        Flux.merge(workers, writers).then().block(Duration.ofMinutes(2));
        // Whatever the writers released may be due again: drain it.
        loop(queue, List.of(), claims, rounds).block(TIMEOUT);

        assertTrue(deadlocks.isEmpty(), "SQLSTATEs seen: " + deadlocks);
        var stats = queue.stats().block(TIMEOUT);
        assertEquals(0, stats.pending(), stats.toString());
        assertEquals(2_000, stats.completed());
        assertFalse(claims.isEmpty());
    }

    private static Mono<Void> loop(ReactiveWorkQueue<String> queue, List<String> finished, Map<String, Integer> claims,
            AtomicInteger rounds) {
        return queue.completeAndClaim(finished, 50, LEASE)
                .onErrorResume(e -> Mono.error(new AssertionError("completeAndClaim failed", e)))
                .flatMap(items -> {
                    rounds.incrementAndGet();
                    items.forEach(i -> claims.merge(i.key(), 1, Integer::sum));
                    if (items.isEmpty() && finished.isEmpty()) {
                        return Mono.empty();
                    }
                    return loop(queue, keys(items), claims, rounds);
                });
    }
}
