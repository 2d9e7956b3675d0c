package io.workqueue.faults;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.spi.Connection;
import io.workqueue.Entry;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkQueueMeters;
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
import org.junit.jupiter.api.extension.ExtendWith;
import io.workqueue.testing.ExpectedLogs;

/**
 * Scenario 9: the one total lock order, under load.
 *
 * <p>For 30 seconds, concurrent loops run mixed batches — group-committed and transactional
 * enqueues (shuffled, with duplicate keys), complete, release and remove — over overlapping subsets
 * of 200 keys, through several queue instances on one queue name, with {@code writeAttempts(1)} so
 * no retry hides a deadlock. Every failure is counted by SQLSTATE: there must be no 40P01
 * (deadlock) and no 21000 (a row touched twice by one upsert) — no failure at all. A short control
 * run first shows that the same counting does see deadlocks when writers lock the same rows in
 * different orders.
 *
 * <p>Claims are not in that mix, because they are not in the total order: a claim locks rows in
 * priority order, relying on SKIP LOCKED never to wait. On PostgreSQL 15 it can wait in a narrow
 * race (a row whose updater commits while the claim is looking at it makes the claim follow the
 * update chain, and that step waits regardless of SKIP LOCKED: "while locking updated version ...
 * of tuple" in the server log), and while it waits it holds the rows it already leased, so a rare
 * cycle with a lock-ordered writer is possible. The second test runs claimStream workers and the
 * reaper among the writers with the default {@code writeAttempts} and proves those rare deadlocks
 * never reach a caller: writers retry them and claimStream backs off and carries on.
 */
@ExtendWith(ExpectedLogs.class)
class LockOrderFaultIT {
    private static final Logger log = LoggerFactory.getLogger(LockOrderFaultIT.class);
    private static final Duration RUN = Duration.ofSeconds(30);
    private static final int KEYS = 200;
    private static final int LOOPS = 8;
    private static final int INSTANCES = 4;
    private static final int CLAIMERS = 3;
    private static final Duration WITH_CLAIMS_RUN = Duration.ofSeconds(15);

    private ConnectionPool pool;

    @AfterEach
    void cleanUp() {
        if (pool != null) {
            pool.disposeLater().block(Duration.ofSeconds(30)); // bounded: a stuck close fails the test, not CI
        }
    }

    @Test
    void writersInTheOneTotalOrderNeverDeadlockNorTouchARowTwice() {
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
        Map<String, AtomicLong> failures = new ConcurrentHashMap<>();
        Map<String, AtomicLong> operations = new ConcurrentHashMap<>();

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
        log.info("[lock order] {} s of {} concurrent writer loops: {} mixed batches {} over {} overlapping keys with"
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

    @Test
    void claimsAndTheReaperAmongTheWritersSurfaceNoFailure() {
        FaultServer server = FaultServer.any();
        String prefix = server.createTable();
        pool = server.pool(LOOPS + 4);
        long seed = System.nanoTime();
        log.info("[lock order, with claims] batches drawn with seed {}", seed);
        List<String> keys = Drain.keys("k-", 0, KEYS);
        List<SimpleMeterRegistry> registries = new ArrayList<>(); // one each: instances share the name
        List<ReactiveWorkQueue<String>> instances = new ArrayList<>();
        for (int i = 0; i < INSTANCES; i++) {
            registries.add(new SimpleMeterRegistry());
            instances.add(ReactiveWorkQueue.builder(pool, String.class)
                    .config(WorkQueueConfig.builder("lock-order-claims").tablePrefix(prefix)
                            .retention(Duration.ofSeconds(1)).build()) // default writeAttempts
                    .meterRegistry(registries.get(i))
                    .build());
        }
        instances.get(0).enqueueKeys(keys).block(Duration.ofSeconds(30));

        Map<String, AtomicLong> failures = new ConcurrentHashMap<>();
        Map<String, AtomicLong> operations = new ConcurrentHashMap<>();
        AtomicLong claimed = new AtomicLong();
        long deadline = System.nanoTime() + WITH_CLAIMS_RUN.toNanos();
        Flux<Object> writers = Flux.range(0, LOOPS - CLAIMERS).flatMap(loop -> {
            Random random = new Random(seed + loop);
            return Mono.defer(() -> randomOperation(random, instances, keys, operations))
                    .onErrorResume(e -> count(failures, e))
                    .repeat(() -> System.nanoTime() < deadline);
        }, LOOPS);
        // Workers lease with short leases, then complete or release what they got, in batches.
        Flux<Object> claimers = Flux.range(0, CLAIMERS).flatMap(w -> {
            Random random = new Random(seed - w);
            ReactiveWorkQueue<String> queue = instances.get(w % INSTANCES);
            return queue.claimStream(Duration.ofMillis(300), Duration.ofMillis(20))
                    .doOnNext(item -> claimed.incrementAndGet())
                    .map(item -> item.key())
                    .bufferTimeout(20, Duration.ofMillis(5), true)
                    .concatMap(batch -> (random.nextBoolean() ? queue.complete(batch)
                            : queue.release(Duration.ZERO, null, batch))
                            .onErrorResume(e -> count(failures, e)))
                    .takeUntil(ignored -> System.nanoTime() >= deadline)
                    .onErrorResume(e -> count(failures, e))
                    .then(Mono.empty());
        }, CLAIMERS);
        Flux<Object> reaper = Mono.defer(() -> instances.get(0).reap())
                .onErrorResume(e -> count(failures, e))
                .then(Mono.<Object>empty())
                .repeat(() -> System.nanoTime() < deadline);
        Flux.merge(writers, claimers, reaper).blockLast(WITH_CLAIMS_RUN.plusSeconds(60));

        double retries = registries.stream()
                .flatMap(registry -> registry.find(WorkQueueMeters.WRITE_RETRIES).counters().stream())
                .mapToDouble(c -> c.count()).sum();
        log.info("[lock order, with claims] {} s: {} writer batches {}, {} items claimed by {} claimStream workers,"
                        + " the reaper running throughout, default writeAttempts: {} writes retried on 40P01/40001;"
                        + " failures that reached a caller {}",
                WITH_CLAIMS_RUN.toSeconds(), operations.values().stream().mapToLong(AtomicLong::get).sum(),
                new TreeMap<>(operations), claimed.get(), CLAIMERS, (long) retries, new TreeMap<>(failures));
        assertEquals(Map.of(), Map.copyOf(failures), "no failure reached a caller");
        assertTrue(claimed.get() > 0, "the workers claimed");
    }

    private Mono<Object> randomOperation(Random random, List<ReactiveWorkQueue<String>> instances,
            List<String> keys, Map<String, AtomicLong> operations) {
        ReactiveWorkQueue<String> queue = instances.get(random.nextInt(instances.size()));
        List<String> subset = subset(random, keys);
        int choice = random.nextInt(5);
        String name = switch (choice) {
            case 0 -> "enqueue";
            case 1 -> "enqueue-in-transaction";
            case 2 -> "complete";
            case 3 -> "release";
            default -> "remove";
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
            default -> queue.remove(subset);
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
