package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.pool.ConnectionPoolConfiguration;
import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactories;
import io.r2dbc.spi.ConnectionFactory;
import io.r2dbc.spi.ConnectionFactoryOptions;
import io.r2dbc.spi.Option;
import io.workqueue.Housekeeping;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkQueueException;
import io.workqueue.WorkQueueMeters;
import io.workqueue.internal.base.TableNames;
import io.workqueue.migrations.WorkQueueMigrations;
import io.workqueue.testing.Poll;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * Housekeeping once per queue per interval for a whole fleet: several instances of one queue
 * (each its own queue object, as separate processes would have) elect one keeper on the database;
 * the others report its reading; when the keeper dies (its loop stops and its sessions are
 * terminated) another takes over within moments of its lease ending.
 */
class HousekeepingIT {
    private static final Duration WAIT = Duration.ofSeconds(20);
    private static final Duration LEASE = Duration.ofSeconds(30);
    private static String prefix;
    private final List<ConnectionPool> pools = new ArrayList<>();
    private final List<Disposable> loops = new ArrayList<>();

    @BeforeAll
    static void createTable() {
        prefix = TestDatabase.createTable();
    }

    @AfterEach
    void closeEverything() {
        loops.forEach(Disposable::dispose);
        pools.forEach(pool -> pool.disposeLater().block(WAIT));
    }

    /** One fleet member: its own pool, its sessions named {@code application}, its own meters. */
    private ReactiveWorkQueue<String> member(String queue, String application, MeterRegistry registry) {
        ConnectionFactory plain = ConnectionFactories.get(ConnectionFactoryOptions.parse(TestDatabase.url()).mutate()
                .option(Option.valueOf("applicationName"), application)
                .build());
        ConnectionPool pool = new ConnectionPool(ConnectionPoolConfiguration.builder(plain)
                .initialSize(0).maxSize(4).maxAcquireTime(Duration.ofSeconds(10)).build());
        pools.add(pool);
        return ReactiveWorkQueue.builder(pool, String.class)
                .config(WorkQueueConfig.builder(queue).tablePrefix(prefix).retention(Duration.ofSeconds(1)).build())
                .meterRegistry(registry)
                .build();
    }

    private ReactiveWorkQueue<String> member(String queue, String application) {
        return member(queue, application, new SimpleMeterRegistry());
    }

    @Test
    void oneOfThreeKeepsHouseAndTheOthersReportItsReading() {
        String queue = TestDatabase.uniqueName("three");
        MeterRegistry followerMeters = new SimpleMeterRegistry();
        ReactiveWorkQueue<String> a = member(queue, "keeper-a");
        ReactiveWorkQueue<String> b = member(queue, "keeper-b", followerMeters);
        ReactiveWorkQueue<String> c = member(queue, "keeper-c");
        a.enqueueKeys("one", "two", "three", "four", "done-1", "done-2").block(WAIT);
        a.complete("done-1", "done-2").block(WAIT);
        Poll.until(WAIT, "the completions to pass retention", () -> TestDatabase.queryLong(
                "SELECT count(*) FROM " + WorkQueueMigrations.tableName(prefix)
                        + " WHERE queue_name = $1 AND completed_at < now() - INTERVAL '1 second'", queue) == 2);

        Housekeeping kept = a.housekeep(LEASE).block(WAIT);
        assertTrue(kept.kept(), kept.toString());
        assertEquals(2, kept.reaped(), "the keeper reaps");
        assertEquals(4, kept.stats().pending());
        assertEquals(Duration.ZERO, kept.readingAge());

        for (ReactiveWorkQueue<String> follower : List.of(b, c)) {
            Housekeeping followed = follower.housekeep(LEASE).block(WAIT);
            assertFalse(followed.kept(), followed.toString());
            assertEquals(kept.keeper(), followed.keeper(), "every member names the one keeper");
            assertEquals(0, followed.reaped(), "a follower reaps nothing");
            assertEquals(kept.stats(), followed.stats(), "and reports the keeper's reading");
            assertEquals(kept.horizon(), followed.horizon());
            assertTrue(followed.readingAge().compareTo(WAIT) < 0, followed.toString());
            assertTrue(followed.keeperLeaseLeft().compareTo(LEASE) <= 0
                    && followed.keeperLeaseLeft().compareTo(LEASE.minus(WAIT)) > 0, followed.toString());
        }
        assertEquals(4.0, followerMeters.get(WorkQueueMeters.DEPTH).gauge().value(),
                "a follower's depth gauge is the keeper's reading");

        assertTrue(a.housekeep(LEASE).block(WAIT).kept(), "the keeper renews its own role");
        assertFalse(b.housekeep(LEASE).block(WAIT).kept(), "and keeps it while it renews");
    }

    /**
     * A member that finds another's lease live only reads: before, every round wrote the row
     * (a new row version, a WAL flush, a queue on the row's lock for every follower of a fleet),
     * so a session holding that row stalled every follower's round with it.
     */
    @Test
    void aFollowersRoundWritesNothingAndWaitsForNoLock() {
        String queue = TestDatabase.uniqueName("follow");
        ReactiveWorkQueue<String> a = member(queue, "follow-a");
        ReactiveWorkQueue<String> b = member(queue, "follow-b");
        a.enqueueKeys("one").block(WAIT);
        Housekeeping kept = a.housekeep(LEASE).block(WAIT);
        assertTrue(kept.kept(), kept.toString());
        String row = "SELECT xmin::text || ' ' || ctid::text FROM " + TableNames.queues(prefix) + " WHERE queue_name = $1";
        String version = TestDatabase.queryString(row, queue);

        Connection holder = Mono.from(TestDatabase.plain().create()).block(WAIT);
        try {
            Mono.from(holder.beginTransaction()).block(WAIT);
            Flux.from(holder.createStatement("SELECT 1 FROM " + TableNames.queues(prefix) + " WHERE queue_name = $1 FOR UPDATE")
                    .bind("$1", queue).execute()).flatMap(result -> result.getRowsUpdated()).blockLast(WAIT);
            for (int round = 0; round < 3; round++) {
                Housekeeping followed = b.housekeep(LEASE).block(Duration.ofSeconds(5));
                assertFalse(followed.kept(), followed.toString());
                assertEquals(kept.keeper(), followed.keeper());
                assertEquals(kept.stats(), followed.stats(), "the keeper's reading, read past the lock");
            }
        } finally {
            Mono.from(holder.rollbackTransaction()).onErrorResume(e -> Mono.empty()).block(WAIT);
            Mono.from(holder.close()).block(WAIT);
        }
        assertEquals(version, TestDatabase.queryString(row, queue), "the followers' rounds left the row as it was");
        assertTrue(a.housekeep(LEASE).block(WAIT).kept(), "the keeper still renews");
        assertNotEquals(version, TestDatabase.queryString(row, queue), "by writing the row");
    }

    @Test
    void racingMembersElectExactlyOne() {
        String queue = TestDatabase.uniqueName("race");
        List<ReactiveWorkQueue<String>> fleet = IntStream.range(0, 8).mapToObj(i -> member(queue, "racer-" + i)).toList();
        fleet.get(0).enqueueKeys("x").block(WAIT);
        for (int round = 0; round < 20; round++) {
            List<Housekeeping> outcomes = Flux.fromIterable(fleet)
                    .flatMap(member -> member.housekeep(LEASE).subscribeOn(Schedulers.parallel()), fleet.size())
                    .collectList().block(WAIT);
            assertEquals(1, outcomes.stream().filter(Housekeeping::kept).count(), "round " + round + ": " + outcomes);
            assertEquals(1, outcomes.stream().map(Housekeeping::keeper).distinct().count(),
                    "all agree on the keeper: " + outcomes);
        }
    }

    @Test
    void theRolePassesOnceTheKeepersLeaseEnds() {
        String queue = TestDatabase.uniqueName("lapse");
        ReactiveWorkQueue<String> a = member(queue, "lapse-a");
        ReactiveWorkQueue<String> b = member(queue, "lapse-b");
        Duration shortLease = Duration.ofMillis(600);
        Housekeeping first = a.housekeep(shortLease).block(WAIT);
        assertTrue(first.kept());
        Housekeeping waiting = b.housekeep(shortLease).block(WAIT);
        assertFalse(waiting.kept(), "held until the lease ends");

        Housekeeping taken = Poll.until(WAIT, "b to take the role over", () -> b.housekeep(shortLease).block(WAIT),
                Housekeeping::kept);
        assertNotEquals(first.keeper(), taken.keeper());
        Housekeeping former = a.housekeep(shortLease).block(WAIT);
        assertFalse(former.kept(), "the former keeper follows now: " + former);
        assertEquals(taken.keeper(), former.keeper());
        assertEquals(taken.stats(), former.stats(), "and reads its successor's reading, which it did not overwrite");
    }

    @Test
    void aKeeperThatDiesIsReplacedWithinMomentsOfItsLeaseEnding() {
        String queue = TestDatabase.uniqueName("dies");
        Duration interval = Duration.ofSeconds(1);
        List<String> names = List.of("dies-a", "dies-b", "dies-c");
        List<ReactiveWorkQueue<String>> fleet = names.stream().map(name -> member(queue, name)).toList();
        Queue<Observed> seen = new ConcurrentLinkedQueue<>();
        List<Disposable> running = new ArrayList<>();
        for (int i = 0; i < fleet.size(); i++) {
            int member = i;
            Disposable loop = fleet.get(i).housekeeping(interval)
                    .subscribe(outcome -> seen.add(new Observed(member, outcome, System.nanoTime())));
            running.add(loop);
            loops.add(loop);
        }
        Observed keeping = Poll.until(WAIT, "a keeper", () -> seen.stream().filter(o -> o.outcome().kept()).findFirst(),
                java.util.Optional::isPresent).get();
        // Let it renew once, so what follows is a takeover, not the first election.
        Poll.until(WAIT, "the keeper to renew", () -> seen.stream()
                .filter(o -> o.member() == keeping.member() && o.outcome().kept()).count() >= 2);
        long lastRenewal = seen.stream().filter(o -> o.member() == keeping.member() && o.outcome().kept())
                .mapToLong(Observed::atNanos).max().getAsLong();

        // It dies: its loop stops and every session it had is terminated.
        running.get(keeping.member()).dispose();
        long died = System.nanoTime();
        long terminated = TestDatabase.queryLong("SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))"
                + " FROM pg_stat_activity WHERE application_name = $1", names.get(keeping.member()));
        Observed successor = Poll.until(WAIT, "another member to take over",
                () -> seen.stream().filter(o -> o.member() != keeping.member() && o.outcome().kept()).findFirst(),
                java.util.Optional::isPresent).get();

        double afterDeath = (successor.atNanos() - died) / 1e9;
        double afterLeaseEnd = (successor.atNanos() - lastRenewal) / 1e9 - interval.multipliedBy(5).dividedBy(4).toMillis() / 1e3;
        System.out.printf("keeper %s died (%d sessions terminated); %s took over %.3f s later, %.3f s after"
                + " its lease (1.25 intervals from its last renewal) could have ended%n",
                names.get(keeping.member()), terminated, names.get(successor.member()), afterDeath, afterLeaseEnd);
        assertTrue(afterDeath <= 1.5 * interval.toMillis() / 1e3,
                "taken over within 1.25 intervals of the death (the lease), and a little, but " + afterDeath + " s");
        assertTrue(afterLeaseEnd < interval.toMillis() / 1e3, "within an interval of the lease ending: " + afterLeaseEnd);
        Observed after = Poll.until(WAIT, "the third member to follow the successor", () -> seen.stream()
                        .filter(o -> o.member() != keeping.member() && o.member() != successor.member()
                                && o.atNanos() > successor.atNanos())
                        .findFirst(), java.util.Optional::isPresent).get();
        assertFalse(after.outcome().kept());
        assertEquals(successor.outcome().keeper(), after.outcome().keeper());
    }

    private record Observed(int member, Housekeeping outcome, long atNanos) {}

    @Test
    void badArgumentsFailOnlyTheirOwnCallAtSubscription() {
        ReactiveWorkQueue<String> a = member(TestDatabase.uniqueName("bad"), "bad-a");
        Mono<Housekeeping> zero = a.housekeep(Duration.ZERO);
        Mono<Housekeeping> none = a.housekeep(null);
        Flux<Housekeeping> tooOften = a.housekeeping(Duration.ofNanos(999_999));
        assertThrows(IllegalArgumentException.class, () -> zero.block(WAIT));
        assertThrows(NullPointerException.class, () -> none.block(WAIT));
        assertThrows(IllegalArgumentException.class, () -> tooOften.blockFirst(WAIT));
        assertTrue(a.housekeep(Duration.ofSeconds(Long.MAX_VALUE)).block(WAIT).kept(), "a century at most, not an overflow");
    }

    @Test
    void aVersionTwoTableSaysToUpgrade() {
        String old = TestDatabase.uniquePrefix();
        TestDatabase.execute(WorkQueueMigrations.versionedScript(1, old));
        TestDatabase.execute(WorkQueueMigrations.versionedScript(2, old));
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(TestDatabase.pool(), String.class)
                .config(WorkQueueConfig.builder("old").tablePrefix(old).build()).build();
        queue.enqueueKeys("still works").block(WAIT);
        WorkQueueException error = assertThrows(WorkQueueException.class, () -> queue.housekeep(LEASE).block(WAIT));
        assertTrue(error.getMessage().contains("WorkQueueMigrations.apply"), error.getMessage());
        WorkQueueMigrations.apply(TestDatabase.pool(), old).block(WAIT);
        Housekeeping upgraded = queue.housekeep(LEASE).block(WAIT);
        assertNotNull(upgraded.stats());
        assertEquals(1, upgraded.stats().pending(), "nothing was lost in the upgrade");
    }
}
