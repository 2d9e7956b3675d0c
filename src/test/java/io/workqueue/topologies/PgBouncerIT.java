package io.workqueue.topologies;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactory;
import io.r2dbc.spi.R2dbcException;
import io.workqueue.Entry;
import io.workqueue.Housekeeping;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.Stats;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkerOptions;
import io.workqueue.notify.NotificationDeliveryException;
import io.workqueue.notify.PgNotificationListener;
import io.workqueue.testing.Poll;
import io.workqueue.testing.Queues;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import java.util.function.UnaryOperator;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import org.junit.jupiter.api.extension.ExtendWith;
import io.workqueue.testing.ExpectedLogs;

/**
 * The queue behind a real PgBouncer in transaction pooling mode. r2dbc-postgresql names the
 * statements it caches ({@code S_0}, {@code S_1}, ...) per client connection, while the pooler
 * hands each transaction whatever server connection is free: two clients' {@code S_0} meet on one
 * server connection and the second fails (SQLSTATE 42P05). With the driver's statement cache off
 * ({@code preparedStatementCacheQueries=0}) every statement is unnamed and lives only within its
 * transaction, and the whole contract holds through the pooler. {@code LISTEN} is session state,
 * so the listener connects to PostgreSQL directly, beside the pooler.
 */
@ExtendWith(ExpectedLogs.class)
class PgBouncerIT {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static String prefix;
    private static ConnectionPool pooled;

    @BeforeAll
    static void setUp() {
        PgBouncer.url("test", ""); // skips (or fails, in CI) before anything is created without a pooler
        prefix = TestDatabase.createTable(); // directly: DDL is the migration tool's business
        pooled = PgBouncer.pool("test", PgBouncer.WITHOUT_STATEMENT_CACHE, 8);
    }

    @AfterAll
    static void tearDown() {
        if (pooled != null) {
            pooled.disposeLater().block(WAIT);
        }
    }

    private static ReactiveWorkQueue<String> queue(ConnectionFactory factory, String hint,
            UnaryOperator<WorkQueueConfig.Builder> tweak) {
        return Queues.over(factory, prefix, TestDatabase.uniqueName(hint), tweak);
    }

    private static Integer selectParameter(Connection connection, int value) {
        return Flux.from(connection.createStatement("SELECT $1::int").bind(0, value).execute())
                .concatMap(r -> r.map((row, meta) -> row.get(0, Integer.class)))
                .blockLast(WAIT);
    }

    // ---------------------------------------------------------------- the failure, and the fix

    /**
     * The SQLSTATE of each of {@code steps}' failures, in order, or "ok". Under the driver's defaults
     * the first step can already fail: the one server connection may carry an earlier client's
     * {@code S_0}.
     */
    private static List<String> outcomes(List<Runnable> steps) {
        List<String> outcomes = new ArrayList<>();
        for (Runnable step : steps) {
            try {
                step.run();
                outcomes.add("ok");
            } catch (R2dbcException e) {
                outcomes.add(e.getSqlState() + ": " + e.getMessage());
            }
        }
        return outcomes;
    }

    private static boolean anyCollision(List<String> outcomes) {
        return outcomes.stream().anyMatch(o -> o.startsWith("42P05: prepared statement \"S_"));
    }

    @Test
    void withTheDriversDefaultsTwoClientsNamedStatementsCollideOnTheSharedServerConnection() {
        ConnectionFactory defaults = PgBouncer.plain("test_single", "");
        Connection first = Mono.from(defaults.create()).block(WAIT);
        Connection second = Mono.from(defaults.create()).block(WAIT);
        try {
            List<String> outcomes = outcomes(List.of(() -> selectParameter(first, 1), () -> selectParameter(second, 2)));
            assertTrue(anyCollision(outcomes), () -> "expected a named-statement collision: " + outcomes);
        } finally {
            Mono.from(first.close()).block(WAIT);
            Mono.from(second.close()).block(WAIT);
        }
    }

    @Test
    void withTheDriversDefaultsTwoQueueClientsClaimsCollide() {
        ConnectionFactory defaults = PgBouncer.plain("test_single", "");
        ReactiveWorkQueue<String> one = queue(defaults, "pgb-default-1", c -> c);
        ReactiveWorkQueue<String> two = queue(defaults, "pgb-default-2", c -> c);
        List<String> outcomes = outcomes(List.of(() -> one.claim(1, Duration.ofSeconds(30)).block(WAIT),
                () -> two.claim(1, Duration.ofSeconds(30)).block(WAIT)));
        assertTrue(anyCollision(outcomes), () -> "expected a named-statement collision: " + outcomes);
    }

    @Test
    void withTheStatementCacheOffClientsShareTheServerConnectionFreely() {
        ConnectionFactory uncached = PgBouncer.plain("test_single", PgBouncer.WITHOUT_STATEMENT_CACHE);
        Connection first = Mono.from(uncached.create()).block(WAIT);
        Connection second = Mono.from(uncached.create()).block(WAIT);
        try {
            for (int i = 0; i < 3; i++) {
                assertEquals(i, selectParameter(first, i));
                assertEquals(-i, selectParameter(second, -i));
            }
        } finally {
            Mono.from(first.close()).block(WAIT);
            Mono.from(second.close()).block(WAIT);
        }
        ReactiveWorkQueue<String> one = queue(uncached, "pgb-uncached-1", c -> c);
        ReactiveWorkQueue<String> two = queue(uncached, "pgb-uncached-2", c -> c);
        one.claim(1, Duration.ofSeconds(30)).block(WAIT);
        two.claim(1, Duration.ofSeconds(30)).block(WAIT);
    }

    // ---------------------------------------------------------------- the contract through the pooler

    @Test
    void groupCommitsClaimsAndEveryWriterKeepTheirContractThroughThePooler() {
        ReactiveWorkQueue<String> queue = queue(pooled, "pgb-contract", c -> c.retention(Duration.ofSeconds(1)));
        List<String> keys = IntStream.range(0, 1_000).mapToObj(i -> String.format("k%04d", i)).toList();

        // 1,000 concurrent single-key enqueues through the group commit.
        Flux.fromIterable(keys).flatMap(queue::enqueueKeys, 256).blockLast(WAIT);
        assertEquals(1_000, queue.stats().block(WAIT).ready());

        // Four claimers at once: every key leased exactly once.
        Set<String> claimed = ConcurrentHashMap.newKeySet();
        List<String> duplicates = new ArrayList<>();
        Flux.range(0, 4).flatMap(claimer -> queue.claim(50, Duration.ofMinutes(5))
                        .repeat()
                        .takeWhile(items -> !items.isEmpty())
                        .doOnNext(items -> items.forEach(item -> {
                            if (!claimed.add(item.key())) {
                                synchronized (duplicates) {
                                    duplicates.add(item.key());
                                }
                            }
                        })))
                .blockLast(WAIT);
        assertEquals(List.of(), duplicates);
        assertEquals(new HashSet<>(keys), claimed);

        // Merged completes of 600 keys from many callers; counts add up.
        long completed = Flux.fromIterable(keys.subList(0, 600)).buffer(7)
                .flatMap(queue::complete, 64).reduce(0L, Long::sum).block(WAIT);
        assertEquals(600, completed);
        assertEquals(100L, queue.release(Duration.ofHours(1), new IllegalStateException("later"), keys.subList(600, 700))
                .block(WAIT));
        assertEquals(100L, queue.release(Duration.ZERO, null, keys.subList(700, 800)).block(WAIT));
        assertEquals(50L, queue.remove(keys.subList(800, 850)).block(WAIT));
        Stats stats = queue.stats().block(WAIT);
        assertEquals(Stats.of(350, 100, 150, 0, 600, stats.oldestReadyAge()), stats);

        // Reap what completed, once it is past retention on the database clock.
        TestDatabase.queryStrings("UPDATE " + Queues.table(prefix) + " SET completed_at = now() - interval '1 hour'"
                + " WHERE queue_name = $1 AND completed_at IS NOT NULL RETURNING 1", queue.name());
        assertEquals(600L, queue.reap().block(WAIT));
        assertEquals(0, queue.stats().block(WAIT).completed());
    }

    @Test
    void aTransactionalEnqueueCommitsAndRollsBackWithTheCallersTransactionThroughThePooler() {
        ReactiveWorkQueue<String> queue = queue(pooled, "pgb-tx", c -> c);
        inTransaction(connection -> queue.enqueue(connection, List.of(Entry.of("kept"))), true);
        inTransaction(connection -> queue.enqueue(connection, List.of(Entry.of("dropped"))), false);

        assertTrue(Queues.exists(prefix, queue, "kept"));
        assertTrue(!Queues.exists(prefix, queue, "dropped"));
    }

    private static void inTransaction(Function<Connection, Mono<Void>> work, boolean commit) {
        Mono.usingWhen(pooled.create(),
                        connection -> Mono.from(connection.beginTransaction())
                                .then(work.apply(connection))
                                .then(Mono.from(commit ? connection.commitTransaction() : connection.rollbackTransaction())),
                        Connection::close)
                .block(WAIT);
    }

    @Test
    void housekeepingElectsOneKeeperThroughThePoolerAndPassesTheRoleOn() {
        // Three instances share one queue through the pooler: no session outlives a transaction,
        // so the role must live in a row, on the database clock.
        String name = TestDatabase.uniqueName("keepers");
        List<ReactiveWorkQueue<String>> fleet = List.of(
                Queues.over(pooled, prefix, name, c -> c), Queues.over(pooled, prefix, name, c -> c),
                Queues.over(pooled, prefix, name, c -> c));
        fleet.get(0).enqueueKeys("a", "b").block(WAIT);
        Duration lease = Duration.ofMillis(800);
        List<Housekeeping> first = Flux.fromIterable(fleet).flatMapSequential(q -> q.housekeep(lease)).collectList()
                .block(WAIT);
        assertEquals(1, first.stream().filter(Housekeeping::kept).count(), first.toString());
        Housekeeping keeper = first.stream().filter(Housekeeping::kept).findFirst().orElseThrow();
        assertEquals(2, keeper.stats().pending());

        // The keeper stops; once its lease ends, one of the others takes over.
        ReactiveWorkQueue<String> gone = fleet.get(first.indexOf(keeper));
        List<ReactiveWorkQueue<String>> rest = fleet.stream().filter(q -> q != gone).toList();
        Housekeeping successor = Poll.until(WAIT, "a successor", () -> Flux.fromIterable(rest)
                        .flatMap(q -> q.housekeep(lease)).filter(Housekeeping::kept).next().block(WAIT),
                outcome -> outcome != null);
        assertTrue(!successor.keeper().equals(keeper.keeper()), successor + " after " + keeper);
    }

    @Test
    void processDrainsThroughThePooler() {
        ReactiveWorkQueue<String> queue = queue(pooled, "pgb-process", c -> c);
        queue.enqueueKeys(IntStream.range(0, 300).mapToObj(i -> "p" + i).toList()).block(WAIT);

        List<Item<String>> done = queue.process(item -> Mono.empty(),
                        WorkerOptions.builder().concurrency(16).claimBatch(16).poll(Duration.ofMillis(100)).build())
                .take(300)
                .collectList()
                .block(WAIT);

        assertEquals(300, new HashSet<>(done.stream().map(Item::key).toList()).size());
        Poll.until(WAIT, "all 300 completed", () -> queue.stats().block(WAIT).completed() == 300);
    }

    @Test
    void aListenerThroughThePoolerFailsItsDeliveryCheckAndADirectOnePassesIt() {
        String channel = prefix + "_pgb_probe";
        PgNotificationListener throughPooler = PgNotificationListener.builder(
                        PgBouncer.plain("test", PgBouncer.WITHOUT_STATEMENT_CACHE))
                .channel(channel)
                .build();
        PgNotificationListener direct = PgNotificationListener.builder(TestDatabase.plain())
                .channel(channel)
                .build();
        try {
            for (PgNotificationListener listener : List.of(throughPooler, direct)) {
                AtomicBoolean open = new AtomicBoolean();
                listener.wakeups().filter(w -> w == PgNotificationListener.SESSION_ESTABLISHED)
                        .subscribe(w -> open.set(true));
                Poll.until(WAIT, "the LISTEN session is open", open::get);
            }

            Throwable unheard = assertThrows(RuntimeException.class,
                    () -> throughPooler.verifyDelivery(Duration.ofSeconds(3)).block(WAIT));
            assertInstanceOf(NotificationDeliveryException.class, unheard, unheard::toString);
            direct.verifyDelivery(Duration.ofSeconds(3)).block(WAIT);
        } finally {
            throughPooler.close().block(WAIT);
            direct.close().block(WAIT);
        }
    }

    @Test
    void theListenerConnectsDirectlyAndWakesAQueueThatGoesThroughThePooler() {
        String channel = prefix + "_pgb_wake";
        PgNotificationListener listener = PgNotificationListener.builder(TestDatabase.plain())
                .channel(channel)
                .build();
        try {
            ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(pooled, String.class)
                    .config(WorkQueueConfig.builder(TestDatabase.uniqueName("pgb-wake")).tablePrefix(prefix)
                            .notifyChannel(channel).build())
                    .wakeups(listener.wakeups())
                    .build();
            // A poll far longer than the test's wait: only a notification can deliver the item in time.
            Flux<Item<String>> stream = queue.claimStream(Duration.ofMinutes(5), Duration.ofMinutes(10));
            Item<String> woken = stream.take(1)
                    .doOnSubscribe(s -> Mono.delay(Duration.ofMillis(500))
                            .then(queue.enqueueKeys("wake-me"))
                            .subscribe())
                    .blockLast(WAIT);
            assertEquals("wake-me", woken.key());
        } finally {
            listener.close().block(WAIT);
        }
    }
}
