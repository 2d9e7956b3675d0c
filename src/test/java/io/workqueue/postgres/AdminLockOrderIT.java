package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.workqueue.Entry;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueAdmin;
import io.workqueue.WorkQueueConfig;
import io.workqueue.internal.SqlStates;
import io.workqueue.testing.Queues;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * The admin's actions take their locks in key order like every writer of the queue: retries and
 * removes in any order, racing workers that claim, complete and release the same keys and
 * producers that enqueue them, never deadlock. Nothing here retries (one write attempt
 * everywhere), so a 40P01 would surface. {@code LockOrderIT}'s controls show that the same writes
 * without the order do deadlock.
 */
class AdminLockOrderIT {
    private static final Duration LEASE = Duration.ofMinutes(1);

    @Test
    void retriesAndRemovesRacingWorkersNeverDeadlock() {
        String prefix = TestDatabase.createTable();
        String name = TestDatabase.uniqueName("race");
        UnaryOperator<WorkQueueConfig.Builder> config = c -> c.writeAttempts(1).maxAttempts(2);
        ReactiveWorkQueue<String> workers = Queues.over(TestDatabase.pool(), prefix, name, config);
        ReactiveWorkQueue<String> producer = Queues.over(TestDatabase.pool(), prefix, name, config);
        WorkQueueAdmin admin = WorkQueueAdmin.builder(TestDatabase.pool()).tablePrefix(prefix).queue(workers)
                .writeAttempts(1).build();
        List<String> keys = IntStream.range(0, 60).mapToObj(i -> String.format("k%02d", i)).toList();
        Random random = new Random(7);
        ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();
        AtomicInteger ok = new AtomicInteger();
        AtomicInteger retried = new AtomicInteger();

        for (int round = 0; round < 60; round++) {
            List<String> shuffled = new ArrayList<>(keys);
            Collections.shuffle(shuffled, random);
            List<String> descending = new ArrayList<>(keys);
            Collections.reverse(descending);
            List<Mono<?>> ops = List.of(
                    producer.enqueue(shuffled.stream().map(k -> Entry.of(k).withPriority(random.nextInt(3))).toList()),
                    // A worker: claim, then fail half (released, due at once: they stall on the
                    // second attempt) and complete the rest.
                    workers.claim(20, LEASE).flatMap(items -> {
                        List<String> claimed = new ArrayList<>(items.stream().map(Item::key).toList());
                        Collections.shuffle(claimed, random);
                        int half = claimed.size() / 2;
                        return workers.release(Duration.ZERO, new IllegalStateException("failed"), claimed.subList(0, half))
                                .then(workers.complete(claimed.subList(half, claimed.size())));
                    }),
                    workers.completeAndClaim(shuffled.subList(0, 15), 10, LEASE),
                    admin.retry(name, shuffled).doOnNext(changed -> retried.addAndGet(changed.size())),
                    admin.retry(name, descending),
                    admin.remove(name, shuffled.subList(20, 35)),
                    admin.remove(name, descending.subList(10, 30)),
                    workers.release(Duration.ofMinutes(5), null, descending.subList(0, 40)),
                    admin.purgeCompleted(name, 25));
            Flux.fromIterable(ops)
                    .flatMap(op -> op.subscribeOn(Schedulers.parallel())
                            .doOnSuccess(v -> ok.incrementAndGet())
                            .onErrorResume(e -> {
                                errors.add(e);
                                return Mono.empty();
                            }), ops.size())
                    .then()
                    .block(Duration.ofSeconds(60));
        }

        long deadlocks = errors.stream().filter(e -> SqlStates.DEADLOCK_DETECTED.equals(SqlStates.sqlState(e))).count();
        assertEquals(0, deadlocks, "deadlocks among " + ok + " operations");
        assertEquals(List.of(), List.copyOf(errors), "no operation failed at all");
        assertEquals(60 * 9, ok.get());
        assertTrue(retried.get() > 0, "retries found stalled or delayed items to change");
    }
}
