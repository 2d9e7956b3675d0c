package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.r2dbc.spi.Connection;
import io.workqueue.Entry;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.Stats;
import io.workqueue.testing.CountingConnectionFactory;
import io.workqueue.testing.Queues;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/**
 * The reactive rules every method obeys: cold (nothing happens before subscription, and each
 * subscription performs the operation once), and bad arguments reported at subscription, never
 * thrown by the call.
 */
class LazinessIT {
    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final Duration LEASE = Duration.ofMinutes(5);
    private static String prefix;

    @BeforeAll
    static void createTable() {
        prefix = TestDatabase.createTable();
    }

    /** A queue through a counting factory, and a second instance of the same queue to set things up. */
    private record Counted(ReactiveWorkQueue<String> queue, ReactiveWorkQueue<String> setup, CountingConnectionFactory factory) {}

    private static Counted counted(String hint) {
        String name = TestDatabase.uniqueName(hint);
        CountingConnectionFactory factory = new CountingConnectionFactory(TestDatabase.pool());
        ReactiveWorkQueue<String> queue = Queues.over(factory, prefix, name, c -> c.reapBatchSize(1));
        // Looks behind the claim cursors take connections of their own: not what is counted here.
        ((PostgresWorkQueue<String>) queue).look().disableForTests();
        return new Counted(queue, Queues.over(TestDatabase.pool(), prefix, name, c -> c), factory);
    }

    private static String snapshot(ReactiveWorkQueue<String> queue) {
        return TestDatabase.queryStrings("SELECT item_key || ':' || priority || ':' || attempts || ':' || lease_until || ':'"
                + " || coalesce(completed_at::text, '-') || ':' || coalesce(last_error, '-') FROM " + Queues.table(prefix)
                + " WHERE queue_name = $1 ORDER BY item_key", queue.name()).toString();
    }

    @Test
    void nothingTouchesTheDatabaseBeforeSubscription() {
        Counted c = counted("cold");
        ReactiveWorkQueue<String> queue = c.queue();
        c.setup().enqueue(Entry.of("ready"), Entry.of("leased").withPriority(1), Entry.of("done")).block(WAIT);
        c.setup().claim(1, LEASE).block(WAIT);
        c.setup().complete("done").block(WAIT);
        Queues.update(prefix, queue, "done", "completed_at = completed_at - INTERVAL '2 days'");
        String before = snapshot(queue);
        Connection autoCommit = Mono.from(TestDatabase.plain().create()).block(WAIT);

        try {
            List<Publisher<?>> built = List.of(
                    queue.enqueue(List.of(Entry.of("new1"))),
                    queue.enqueue(Entry.of("new2")),
                    queue.enqueueKeys(List.of("new3")),
                    queue.enqueueKeys("new4"),
                    queue.enqueue(autoCommit, List.of(Entry.of("new5"))),
                    queue.claim(10, LEASE),
                    queue.claimStream(LEASE, Duration.ofMillis(100)),
                    queue.complete("ready"),
                    queue.complete(List.of("leased")),
                    queue.release(Duration.ZERO, new RuntimeException("x"), "leased"),
                    queue.release(Duration.ZERO, null, List.of("ready")),
                    queue.remove("ready"),
                    queue.remove(List.of("leased")),
                    queue.reap(),
                    queue.stats(),
                    queue.awaitWork(Duration.ofMillis(1)));
            assertEquals(16, built.size());

            assertEquals(0, c.factory().creates(), "no connection was asked for");
            assertEquals(before, snapshot(queue), "nothing was written");
        } finally {
            Mono.from(autoCommit.close()).block(WAIT);
        }
    }

    @Test
    void eachSubscriptionPerformsTheOperationOnce() {
        Counted c = counted("twice");
        ReactiveWorkQueue<String> queue = c.queue();
        ReactiveWorkQueue<String> setup = c.setup();
        setup.enqueueKeys("c1", "c2", "c3", "c4").block(WAIT);

        Mono<List<Item<String>>> claim = queue.claim(2, LEASE);
        Set<String> claimed = new HashSet<>();
        claim.block(WAIT).forEach(i -> claimed.add(i.key()));
        claim.block(WAIT).forEach(i -> claimed.add(i.key()));
        assertEquals(Set.of("c1", "c2", "c3", "c4"), claimed, "two subscriptions, two batches");
        assertEquals(2, c.factory().creates());

        Mono<Void> enqueue = queue.enqueueKeys("e");
        enqueue.block(WAIT);
        setup.complete("e").block(WAIT);
        enqueue.block(WAIT);
        assertEquals("true", Queues.column(prefix, queue, "e", "completed_at IS NULL"), "the second subscription enqueued again");

        Mono<Long> complete = queue.complete("e");
        assertEquals(1L, complete.block(WAIT));
        setup.enqueueKeys("e").block(WAIT);
        assertEquals(1L, complete.block(WAIT), "the second subscription completed again");

        Mono<Long> release = queue.release(Duration.ZERO, null, "c1");
        assertEquals(1L, release.block(WAIT));
        assertEquals("c1", setup.claim(1, LEASE).block(WAIT).get(0).key());
        assertEquals(1L, release.block(WAIT), "the second subscription released again");
        assertEquals("true", Queues.column(prefix, queue, "c1", "lease_until = 'epoch'"));

        Mono<Long> remove = queue.remove("c2");
        assertEquals(1L, remove.block(WAIT));
        setup.enqueueKeys("c2").block(WAIT);
        assertEquals(1L, remove.block(WAIT), "the second subscription removed again");

        setup.enqueueKeys("old1", "old2").block(WAIT);
        setup.complete("old1", "old2").block(WAIT);
        for (String key : List.of("old1", "old2")) {
            Queues.update(prefix, queue, key, "completed_at = completed_at - INTERVAL '2 days'");
        }
        Mono<Long> reap = queue.reap(); // at most one per call
        assertEquals(1L, reap.block(WAIT));
        assertEquals(1L, reap.block(WAIT), "the second subscription reaped again");

        Mono<Stats> stats = queue.stats();
        long pendingBefore = stats.block(WAIT).pending();
        setup.enqueueKeys("s").block(WAIT);
        assertEquals(pendingBefore + 1, stats.block(WAIT).pending(), "a fresh read per subscription");
    }

    @Test
    void badArgumentsAreSignalledAtSubscriptionNotThrown() {
        Counted c = counted("arguments");
        ReactiveWorkQueue<String> queue = c.queue();
        Connection connection = Mono.from(TestDatabase.plain().create()).block(WAIT);
        try {
            Map<String, Supplier<Publisher<?>>> nulls = new LinkedHashMap<>();
            nulls.put("enqueue(null collection)", () -> queue.enqueue((Collection<Entry<String>>) null));
            nulls.put("enqueue(null array)", () -> queue.enqueue((Entry<String>[]) null));
            nulls.put("enqueue(null entry)", () -> queue.enqueue(Arrays.asList(Entry.of("a"), null)));
            nulls.put("enqueueKeys(null collection)", () -> queue.enqueueKeys((Collection<String>) null));
            nulls.put("enqueueKeys(null array)", () -> queue.enqueueKeys((String[]) null));
            nulls.put("enqueue(null connection)", () -> queue.enqueue(null, List.of(Entry.of("a"))));
            nulls.put("enqueue(connection, null)", () -> queue.enqueue(connection, null));
            nulls.put("complete(null collection)", () -> queue.complete((Collection<String>) null));
            nulls.put("complete(null array)", () -> queue.complete((String[]) null));
            nulls.put("release(null delay)", () -> queue.release(null, null, "a"));
            nulls.put("release(null collection)", () -> queue.release(Duration.ZERO, null, (Collection<String>) null));
            nulls.put("release(null array)", () -> queue.release(Duration.ZERO, null, (String[]) null));
            nulls.put("remove(null collection)", () -> queue.remove((Collection<String>) null));
            nulls.put("remove(null array)", () -> queue.remove((String[]) null));
            Map<String, Supplier<Publisher<?>>> nonPositive = new LinkedHashMap<>();
            for (Duration bad : Arrays.asList(Duration.ZERO, Duration.ofMillis(-5), null)) {
                nonPositive.put("claim(lease " + bad + ")", () -> queue.claim(1, bad));
                nonPositive.put("claimStream(lease " + bad + ")", () -> queue.claimStream(bad, Duration.ofSeconds(1)));
                nonPositive.put("claimStream(poll " + bad + ")", () -> queue.claimStream(LEASE, bad));
                nonPositive.put("awaitWork(poll " + bad + ")", () -> queue.awaitWork(bad));
            }
            // Positive but under the database clock's microsecond: a lease that would end as it began.
            for (Duration bad : List.of(Duration.ofNanos(1), Duration.ofNanos(999))) {
                nonPositive.put("claim(lease " + bad + ")", () -> queue.claim(1, bad));
                nonPositive.put("completeAndClaim(lease " + bad + ")", () -> queue.completeAndClaim(List.of("a"), 1, bad));
                nonPositive.put("claimStream(lease " + bad + ")", () -> queue.claimStream(bad, Duration.ofSeconds(1)));
            }

            List<String> wrong = new ArrayList<>();
            nulls.forEach((call, make) -> {
                Publisher<?> publisher = assertDoesNotThrow(make::get, call + " threw at the call");
                StepVerifier.create(publisher)
                        .expectErrorSatisfies(e -> {
                            if (!(e instanceof NullPointerException) && !(e instanceof IllegalArgumentException)) {
                                wrong.add(call + " signalled " + e);
                            }
                        })
                        .verify(WAIT);
            });
            nonPositive.forEach((call, make) -> {
                Publisher<?> publisher = assertDoesNotThrow(make::get, call + " threw at the call");
                StepVerifier.create(publisher).expectError(IllegalArgumentException.class).verify(WAIT);
            });
            assertEquals(List.of(), wrong);
            assertEquals(0, c.factory().creates(), "a bad argument never reaches the database");
        } finally {
            Mono.from(connection.close()).block(WAIT);
        }
    }

    @Test
    void anEmptyBatchCompletesWithoutTouchingTheDatabase() {
        Counted c = counted("empty");
        ReactiveWorkQueue<String> queue = c.queue();

        StepVerifier.create(queue.enqueue(List.of())).verifyComplete();
        StepVerifier.create(queue.enqueueKeys(List.of())).verifyComplete();
        StepVerifier.create(queue.complete(List.of())).expectNext(0L).verifyComplete();
        StepVerifier.create(queue.release(Duration.ZERO, null, List.of())).expectNext(0L).verifyComplete();
        StepVerifier.create(queue.remove(List.of())).expectNext(0L).verifyComplete();
        assertEquals(0, c.factory().creates());
    }
}
