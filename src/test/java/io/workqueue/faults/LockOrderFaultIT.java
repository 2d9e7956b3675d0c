package io.workqueue.faults;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.spi.Connection;
import io.workqueue.Entry;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.internal.SqlStates;
import io.workqueue.migrations.WorkQueueMigrations;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Scenario 9: the one total lock order, under load. For 30 seconds, concurrent loops run mixed
 * batches — group-committed and transactional enqueues (shuffled, with duplicate keys), complete,
 * release, remove, claim and reap — over overlapping subsets of 200 keys, through several queue
 * instances on one queue name, with {@code writeAttempts(1)} so no retry hides a deadlock. Every
 * failure is counted by SQLSTATE: there must be no 40P01 (deadlock) and no 21000 (a row touched
 * twice by one upsert) — no failure at all. A short control run first shows that the same counting
 * does see deadlocks when writers lock the same rows in different orders.
 */
class LockOrderFaultIT {
    private static final Logger log = LoggerFactory.getLogger(LockOrderFaultIT.class);
    private static final Duration RUN = Duration.ofSeconds(30);
    private static final int KEYS = 200;
    private static final int LOOPS = 8;
    private static final int INSTANCES = 4;

    private ConnectionPool pool;

    @AfterEach
    void cleanUp() {
        if (pool != null) {
            pool.dispose();
        }
    }

    @Test
    void mixedOverlappingBatchesNeverDeadlockNorTouchARowTwice() {
        FaultServer server = FaultServer.any();
        String prefix = server.createTable();
        String table = WorkQueueMigrations.tableName(prefix);
        pool = server.pool(LOOPS + 2);
        long seed = System.nanoTime();
        log.info("[lock order] batches drawn with seed {}", seed);
        List<String> keys = Drain.keys("k-", 0, KEYS);

        List<ReactiveWorkQueue<String>> instances = new ArrayList<>();
        for (int i = 0; i < INSTANCES; i++) {
            instances.add(ReactiveWorkQueue.builder(pool, String.class)
                    .config(WorkQueueConfig.builder("lock-order").tablePrefix(prefix).writeAttempts(1)
                            .retention(Duration.ofSeconds(1)).build())
                    .build());
        }
        instances.get(0).enqueueKeys(keys).block(Duration.ofSeconds(30));

        // Control: the same counting sees deadlocks when two writers lock rows in different orders.
        Map<String, AtomicLong> controlFailures = new ConcurrentHashMap<>();
        long controlDeadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        Flux.range(0, 4)
                .flatMap(loop -> {
                    Random random = new Random(seed - loop);
                    return Mono.defer(() -> unorderedUpdate(table, subset(random, keys)))
                            .onErrorResume(e -> count(controlFailures, e))
                            .repeat(() -> controlFailures.isEmpty() && System.nanoTime() < controlDeadline);
                }, 4)
                .blockLast(Duration.ofSeconds(60));
        assertTrue(controlFailures.containsKey(SqlStates.DEADLOCK_DETECTED),
                "the control, locking rows one by one in shuffled order, deadlocks: " + controlFailures);

        Map<String, AtomicLong> failures = new ConcurrentHashMap<>();
        Map<String, AtomicLong> operations = new ConcurrentHashMap<>();
        long deadline = System.nanoTime() + RUN.toNanos();
        Flux.range(0, LOOPS)
                .flatMap(loop -> {
                    Random random = new Random(seed + loop);
                    return Mono.defer(() -> randomOperation(random, instances, keys, operations))
                            .onErrorResume(e -> count(failures, e))
                            .repeat(() -> System.nanoTime() < deadline);
                }, LOOPS)
                .blockLast(RUN.plusSeconds(60));

        long total = operations.values().stream().mapToLong(AtomicLong::get).sum();
        log.info("[lock order] {} s of {} concurrent loops: {} mixed batches {} over {} overlapping keys with"
                        + " writeAttempts(1); failures by SQLSTATE {} (40P01: {}, 21000: {}); the control deadlocked:"
                        + " {}",
                RUN.toSeconds(), LOOPS, total, new TreeMap<>(operations), KEYS, new TreeMap<>(failures),
                failures.getOrDefault(SqlStates.DEADLOCK_DETECTED, new AtomicLong()),
                failures.getOrDefault("21000", new AtomicLong()), controlFailures);
        assertEquals(0, failures.getOrDefault(SqlStates.DEADLOCK_DETECTED, new AtomicLong()).get(), "deadlocks");
        assertEquals(0, failures.getOrDefault("21000", new AtomicLong()).get(), "rows touched twice by one upsert");
        assertEquals(Map.of(), Map.copyOf(failures), "no operation failed at all");
        assertTrue(total > LOOPS * 10L, "the loops did run: " + total);
    }

    private Mono<Object> randomOperation(Random random, List<ReactiveWorkQueue<String>> instances,
            List<String> keys, Map<String, AtomicLong> operations) {
        ReactiveWorkQueue<String> queue = instances.get(random.nextInt(instances.size()));
        List<String> subset = subset(random, keys);
        int choice = random.nextInt(8);
        String name = switch (choice) {
            case 0 -> "enqueue";
            case 1 -> "enqueue-in-transaction";
            case 2 -> "complete";
            case 3 -> "release";
            case 4 -> "remove";
            case 5, 6 -> "claim";
            default -> "reap";
        };
        operations.computeIfAbsent(name, n -> new AtomicLong()).incrementAndGet();
        Mono<?> operation = switch (choice) {
            case 0 -> queue.enqueue(entries(random, subset));
            case 1 -> Mono.usingWhen(pool.create(),
                    c -> Mono.from(c.beginTransaction())
                            .then(queue.enqueue(c, entries(random, subset)))
                            .then(Mono.from(c.commitTransaction())),
                    Connection::close);
            case 2 -> queue.complete(subset);
            case 3 -> queue.release(Duration.ofMillis(random.nextInt(50)), null, subset);
            case 4 -> queue.remove(subset);
            case 5, 6 -> queue.claim(1 + random.nextInt(50), Duration.ofMillis(100 + random.nextInt(400)));
            default -> queue.reap();
        };
        return operation.then(Mono.empty());
    }

    /** A shuffled run of up to 60 neighbouring keys (so loops overlap), with some keys twice. */
    private static List<String> subset(Random random, List<String> keys) {
        int size = 1 + random.nextInt(60);
        int from = random.nextInt(keys.size());
        List<String> subset = new ArrayList<>(size + size / 10);
        for (int i = 0; i < size; i++) {
            subset.add(keys.get((from + i) % keys.size()));
        }
        for (int i = 0; i < size / 10; i++) {
            subset.add(subset.get(random.nextInt(size)));
        }
        Collections.shuffle(subset, random);
        return subset;
    }

    /** Entries for {@code keys} with random priorities and delays; duplicate keys stay duplicated. */
    private static List<Entry<String>> entries(Random random, List<String> keys) {
        List<Entry<String>> entries = new ArrayList<>(keys.size());
        for (String key : keys) {
            entries.add(Entry.of(key).withPriority(random.nextInt(5)).withDelay(Duration.ofMillis(random.nextInt(100))));
        }
        return entries;
    }

    /** What the queue avoids: one transaction locking rows one at a time in the caller's order. */
    private Mono<Void> unorderedUpdate(String table, List<String> subset) {
        return Mono.usingWhen(pool.create(),
                c -> Mono.from(c.beginTransaction())
                        .thenMany(Flux.fromIterable(subset).concatMap(key -> Flux.from(c.createStatement(
                                        "UPDATE " + table + " SET priority = priority WHERE queue_name = $1 AND item_key = $2")
                                        .bind(0, "lock-order").bind(1, key).execute())
                                .concatMap(r -> r.getRowsUpdated())))
                        .then(Mono.from(c.commitTransaction())),
                Connection::close);
    }

    private static <T> Mono<T> count(Map<String, AtomicLong> failures, Throwable error) {
        String state = SqlStates.sqlState(error);
        failures.computeIfAbsent(state != null ? state : error.getClass().getName(), s -> new AtomicLong()).incrementAndGet();
        return Mono.empty();
    }
}
