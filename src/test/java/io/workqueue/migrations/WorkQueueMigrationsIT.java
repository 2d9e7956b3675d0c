package io.workqueue.migrations;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactories;
import io.r2dbc.spi.ConnectionFactory;
import io.r2dbc.spi.ConnectionFactoryMetadata;
import io.r2dbc.spi.ConnectionFactoryOptions;
import io.workqueue.InvalidConfigException;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.testing.Poll;
import io.workqueue.testing.TableLock;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;

class WorkQueueMigrationsIT {
    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    private static List<String> indexes(String table) {
        return TestDatabase.queryStrings(
                "SELECT indexname || ' ' || indexdef FROM pg_indexes"
                        + " WHERE schemaname = current_schema() AND tablename = $1 ORDER BY indexname", table);
    }

    private static long tables(String table) {
        return TestDatabase.queryLong(
                "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                        + " WHERE n.nspname = current_schema() AND c.relname = $1 AND c.relkind = 'r'", table);
    }

    @Test
    void applyCreatesTheTableAndBothPartialIndexes() {
        String prefix = TestDatabase.uniquePrefix();
        String table = prefix + "_work_queue_items";
        assertEquals(0, tables(table));

        StepVerifier.create(WorkQueueMigrations.apply(TestDatabase.pool(), prefix)).expectComplete().verify(TIMEOUT);

        assertEquals(1, tables(table));
        List<String> indexes = indexes(table);
        assertEquals(3, indexes.size(), indexes::toString);
        String due = indexes.get(0);
        String primaryKey = indexes.get(1);
        String reap = indexes.get(2);
        assertTrue(due.startsWith(table + "_due_idx "), due);
        assertTrue(due.contains("(queue_name, priority DESC, available_at, item_key) WHERE (completed_at IS NULL)"), due);
        assertTrue(primaryKey.startsWith(table + "_pkey "), primaryKey);
        assertTrue(primaryKey.contains("UNIQUE INDEX") && primaryKey.contains("(queue_name, item_key)"), primaryKey);
        assertTrue(reap.startsWith(table + "_reap_idx "), reap);
        assertTrue(reap.contains("(queue_name, completed_at) WHERE (completed_at IS NOT NULL)"), reap);
        // Space for HOT lease updates: see the DDL's comment and the benchmark analysis.
        assertEquals(List.of("{fillfactor=70}"), TestDatabase.queryStrings(
                "SELECT reloptions::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                        + " WHERE n.nspname = current_schema() AND c.relname = $1", table));
    }

    @Test
    void applyingTwiceIsANoOp() {
        String prefix = TestDatabase.uniquePrefix();
        String table = prefix + "_work_queue_items";
        WorkQueueMigrations.apply(TestDatabase.pool(), prefix).block(TIMEOUT);
        TestDatabase.execute("INSERT INTO " + table + " (queue_name, item_key) VALUES ('q', 'kept')");
        List<String> before = indexes(table);

        StepVerifier.create(WorkQueueMigrations.apply(TestDatabase.pool(), prefix)).expectComplete().verify(TIMEOUT);

        assertEquals(1, tables(table));
        assertEquals(before, indexes(table));
        assertEquals(List.of("kept"), TestDatabase.queryStrings("SELECT item_key FROM " + table));
    }

    @Test
    void applyWorksOnAPlainFactoryAndClosesItsConnection() {
        String prefix = TestDatabase.uniquePrefix();
        String table = prefix + "_work_queue_items";
        // A plain factory tagged with its own application name, so its sessions can be told apart
        // from those of test classes running concurrently.
        String application = "migrations-it-" + prefix;
        String url = TestDatabase.url();
        ConnectionFactory plain = ConnectionFactories.get(ConnectionFactoryOptions.parse(
                url + (url.contains("?") ? "&" : "?") + "applicationName=" + application));

        for (int i = 0; i < 3; i++) {
            StepVerifier.create(WorkQueueMigrations.apply(plain, prefix)).expectComplete().verify(TIMEOUT);
        }

        assertEquals(1, tables(table));
        assertEquals(3, indexes(table).size());
        awaitNoSessions(application);
    }

    /** Waits until the server has no session with this application name left. */
    private static void awaitNoSessions(String application) {
        Mono.fromCallable(() -> TestDatabase.queryLong(
                        "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", application))
                .subscribeOn(Schedulers.boundedElastic())
                .filter(count -> count == 0)
                .repeatWhenEmpty(attempts -> attempts.delayElements(Duration.ofMillis(20)))
                .block(Duration.ofSeconds(10));
    }

    @Test
    void aCancelledApplyLeavesNoStatementWaitingOnTheServer() {
        // A table one version behind, locked by another session's open transaction (a long report,
        // another service's migration): the upgrade's DDL waits for the lock. A start-up timeout
        // then cancels the apply. Were its DDL left queued on the server, every statement of the
        // fleet on the table would queue behind it for as long as the other transaction runs.
        String prefix = TestDatabase.uniquePrefix();
        String table = prefix + "_work_queue_items";
        for (int v = 1; v < WorkQueueMigrations.SCHEMA_VERSION; v++) {
            TestDatabase.execute(WorkQueueMigrations.versionedScript(v, prefix));
        }
        try (TableLock lock = TableLock.hold(table)) {
            StepVerifier.create(WorkQueueMigrations.apply(TestDatabase.plain(), prefix))
                    .then(() -> lock.awaitWaiters(1))
                    .thenCancel()
                    .verify(TIMEOUT);

            Poll.until(Duration.ofSeconds(10), "no statement left waiting behind the lock", () -> lock.waiters() == 0);
            assertEquals(1, TestDatabase.queryLong("SELECT count(*) FROM pg_stat_activity WHERE pid = $1", lock.pid()));
        }
        assertEquals(WorkQueueMigrations.SCHEMA_VERSION - 1,
                WorkQueueMigrations.version(TestDatabase.pool(), prefix).block(TIMEOUT));
        StepVerifier.create(WorkQueueMigrations.apply(TestDatabase.pool(), prefix)).expectComplete().verify(TIMEOUT);
        assertEquals(WorkQueueMigrations.SCHEMA_VERSION, WorkQueueMigrations.version(TestDatabase.pool(), prefix).block(TIMEOUT));
    }

    @Test
    void servicesApplyingTheSameSchemaAtOnceAllSucceed() {
        // A fleet starting together: without serialisation, concurrent CREATE TABLE IF NOT EXISTS
        // races in the catalog and all but one fail with a unique violation on pg_type.
        for (int round = 0; round < 3; round++) {
            String prefix = TestDatabase.uniquePrefix();
            List<Mono<Void>> applies = new java.util.ArrayList<>();
            for (int i = 0; i < 6; i++) {
                applies.add(WorkQueueMigrations.apply(TestDatabase.plain(), prefix).subscribeOn(Schedulers.parallel()));
            }
            StepVerifier.create(Mono.when(applies)).expectComplete().verify(TIMEOUT);
            assertEquals(1, tables(prefix + "_work_queue_items"));
            assertEquals(3, indexes(prefix + "_work_queue_items").size());
        }
    }

    @Test
    void theKeyColumnsAreCollatedBytewiseOnTheServer() {
        String prefix = TestDatabase.createTable();
        List<String> collations = TestDatabase.queryStrings(
                "SELECT column_name || '=' || coalesce(collation_name, 'default') FROM information_schema.columns"
                        + " WHERE table_schema = current_schema() AND table_name = $1"
                        + " AND column_name IN ('queue_name', 'item_key') ORDER BY column_name",
                prefix + "_work_queue_items");
        assertEquals(List.of("item_key=C", "queue_name=C"), collations);
    }

    @Test
    void leaseUntilDefaultsToTheEpochSentinel() {
        String prefix = TestDatabase.createTable();
        String table = prefix + "_work_queue_items";
        TestDatabase.execute("INSERT INTO " + table + " (queue_name, item_key) VALUES ('q', 'k')");
        assertEquals(List.of("true|0|0|true"), TestDatabase.queryStrings(
                "SELECT (lease_until = 'epoch')::text || '|' || priority || '|' || attempts || '|' || (completed_at IS NULL)::text"
                        + " FROM " + table));
    }

    @Test
    void applyWithABadPrefixSignalsAnErrorAtSubscriptionWithoutConnecting() {
        CountingFactory factory = new CountingFactory(TestDatabase.pool());

        Mono<Void> apply = WorkQueueMigrations.apply(factory, "x; DROP TABLE y"); // must not throw here

        StepVerifier.create(apply).expectError(InvalidConfigException.class).verify(TIMEOUT);
        StepVerifier.create(WorkQueueMigrations.apply(factory, "Upper")).expectError(InvalidConfigException.class).verify(TIMEOUT);
        assertEquals(0, factory.creates.get());
    }

    @Test
    void applyWithoutAFactorySignalsAnErrorAtSubscription() {
        Mono<Void> apply = WorkQueueMigrations.apply(null, "ddb"); // a bad argument is not thrown at the call
        StepVerifier.create(apply).expectError(NullPointerException.class).verify(TIMEOUT);
    }

    @Test
    void applyIsColdAndRunsOncePerSubscription() {
        CountingFactory factory = new CountingFactory(TestDatabase.pool());
        String prefix = TestDatabase.uniquePrefix();

        Mono<Void> apply = WorkQueueMigrations.apply(factory, prefix);
        assertEquals(0, factory.creates.get());
        assertEquals(0, tables(prefix + "_work_queue_items"));

        apply.block(TIMEOUT);
        apply.block(TIMEOUT);
        assertEquals(2, factory.creates.get());
        assertEquals(1, tables(prefix + "_work_queue_items"));
    }

    // ------------------------------------------------------------------ the prefix stated once

    @Test
    void applyWithAConfigCreatesTheTableOfItsPrefixAndTheQueueUsesIt() {
        String prefix = TestDatabase.uniquePrefix();
        WorkQueueConfig config = WorkQueueConfig.builder(TestDatabase.uniqueName("once")).tablePrefix(prefix).build();
        CountingFactory factory = new CountingFactory(TestDatabase.pool());

        Mono<Void> apply = WorkQueueMigrations.apply(factory, config);
        assertEquals(0, factory.creates.get(), "cold, like the prefix form");
        StepVerifier.create(apply).expectComplete().verify(TIMEOUT);

        assertEquals(1, tables(prefix + "_work_queue_items"));
        StepVerifier.create(WorkQueueMigrations.version(TestDatabase.pool(), config))
                .expectNext(WorkQueueMigrations.SCHEMA_VERSION).expectComplete().verify(TIMEOUT);
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(TestDatabase.pool(), String.class).config(config).build();
        queue.enqueueKeys("a").block(TIMEOUT);
        assertEquals(List.of("a"), queue.claim(1, Duration.ofMinutes(1)).block(TIMEOUT).stream().map(Item::key).toList());
    }

    @Test
    void aMissingConfigIsABadArgumentSignalledAtSubscription() {
        CountingFactory factory = new CountingFactory(TestDatabase.pool());

        Mono<Void> apply = WorkQueueMigrations.apply(factory, (WorkQueueConfig) null); // not thrown at the call
        Mono<Integer> version = WorkQueueMigrations.version(factory, (WorkQueueConfig) null);

        StepVerifier.create(apply).expectError(NullPointerException.class).verify(TIMEOUT);
        StepVerifier.create(version).expectError(NullPointerException.class).verify(TIMEOUT);
        assertEquals(0, factory.creates.get());
    }

    /** Delegates to a real factory, counting connection requests. */
    private static final class CountingFactory implements ConnectionFactory {
        final AtomicInteger creates = new AtomicInteger();
        private final ConnectionFactory delegate;

        CountingFactory(ConnectionFactory delegate) {
            this.delegate = delegate;
        }

        @Override
        public Publisher<? extends Connection> create() {
            creates.incrementAndGet();
            return delegate.create();
        }

        @Override
        public ConnectionFactoryMetadata getMetadata() {
            return delegate.getMetadata();
        }
    }
}
