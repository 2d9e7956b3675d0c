package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.internal.SqlStates;
import io.workqueue.testing.CountingConnectionFactory;
import io.workqueue.testing.Faults;
import io.workqueue.testing.Poll;
import io.workqueue.testing.Queues;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.function.UnaryOperator;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Sinks;
import reactor.test.StepVerifier;
import reactor.test.subscriber.TestSubscriber;
import org.junit.jupiter.api.extension.ExtendWith;
import io.workqueue.testing.ExpectedLogs;

/**
 * {@code claimStream(lease, poll)}: demand-paced leasing, waiting after a short batch, cancellation,
 * and which database errors end it.
 *
 * <p>Demand is driven from the test thread with a {@link TestSubscriber}, so that the test can read
 * {@code stats()} between requests without blocking a driver thread.
 */
@ExtendWith(ExpectedLogs.class)
class ClaimStreamIT {
    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final Duration LEASE = Duration.ofMinutes(5);
    private static String prefix;

    @BeforeAll
    static void createTable() {
        prefix = TestDatabase.createTable();
    }

    /** The queue under test (through a counting factory) and a plain instance of the same queue. */
    private record Counted(ReactiveWorkQueue<String> queue, ReactiveWorkQueue<String> other, CountingConnectionFactory factory) {}

    private static Counted counted(String hint, UnaryOperator<WorkQueueConfig.Builder> tweak) {
        String name = TestDatabase.uniqueName(hint);
        CountingConnectionFactory factory = new CountingConnectionFactory(TestDatabase.pool());
        ReactiveWorkQueue<String> queue = Queues.over(factory, prefix, name, tweak);
        // Looks behind the claim cursors take connections of their own: not what is counted here.
        ((PostgresWorkQueue<String>) queue).look().disableForTests();
        return new Counted(queue, Queues.over(TestDatabase.pool(), prefix, name, c -> c), factory);
    }

    private static void awaitReceived(TestSubscriber<?> subscriber, int n) {
        Poll.until(WAIT, n + " items downstream", () -> subscriber.getReceivedOnNext().size() >= n || subscriber.isTerminated());
        assertEquals(n, subscriber.getReceivedOnNext().size(), () -> "terminal signal " + subscriber.getTerminalSignal());
    }

    private static long leased(ReactiveWorkQueue<String> queue) {
        return queue.stats().block(WAIT).leased();
    }

    @Test
    void itLeasesExactlyWhatDownstreamRequested() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "demand");
        queue.enqueueKeys(IntStream.range(0, 10).mapToObj(i -> "k" + i).toList()).block(WAIT);
        TestSubscriber<Item<String>> subscriber = TestSubscriber.builder().initialRequest(0).build();

        queue.claimStream(LEASE, Duration.ofMillis(200)).subscribe(subscriber);
        assertEquals(0, leased(queue), "no demand, no lease");
        subscriber.request(3);
        awaitReceived(subscriber, 3);
        assertEquals(3, leased(queue));
        subscriber.request(2);
        awaitReceived(subscriber, 5);
        assertEquals(5, leased(queue));
        subscriber.cancel();

        assertEquals(List.of("k0", "k1", "k2", "k3", "k4"), subscriber.getReceivedOnNext().stream().map(Item::key).toList());
        assertEquals(5, leased(queue));
        assertEquals(5, queue.stats().block(WAIT).ready());
    }

    @Test
    void eachStatementIsCappedByMaxClaimBatchAndAFullBatchDoesNotWait() {
        // A poll of a minute: any wait would outlast the test's deadline.
        Counted c = counted("capped", b -> b.maxClaimBatch(2));
        c.other().enqueueKeys(IntStream.range(0, 10).mapToObj(i -> "k" + i).toList()).block(WAIT);
        TestSubscriber<Item<String>> subscriber = TestSubscriber.builder().initialRequest(0).build();

        c.queue().claimStream(LEASE, Duration.ofMinutes(1)).subscribe(subscriber);
        subscriber.request(5);
        awaitReceived(subscriber, 5);
        subscriber.cancel();

        assertEquals(5, leased(c.other()));
        assertEquals(3, c.factory().creates(), "claims of 2, 2 and 1");
    }

    @Test
    void aShortBatchWaitsThePollBeforeClaimingAgainAndNewKeysAreThenPickedUp() {
        Duration poll = Duration.ofMillis(200);
        Counted c = counted("short", b -> b);
        c.other().enqueueKeys("a", "b").block(WAIT);
        TestSubscriber<Item<String>> subscriber = TestSubscriber.builder().initialRequest(100).build();

        c.queue().claimStream(LEASE, poll).subscribe(subscriber);
        awaitReceived(subscriber, 2);
        Poll.until(WAIT, "a second claim", () -> c.factory().creates() >= 2);
        long start = System.nanoTime();
        Poll.until(WAIT, "four more claims", () -> c.factory().creates() >= 6);
        Duration fourPolls = Duration.ofNanos(System.nanoTime() - start);
        c.other().enqueueKeys("c").block(WAIT);
        awaitReceived(subscriber, 3);
        subscriber.cancel();

        // Polling granularity can shift each end by one probe interval; the waits cannot be shorter than the poll.
        assertTrue(fourPolls.compareTo(poll.multipliedBy(4).minusMillis(60)) >= 0,
                "four claims after short batches took only " + fourPolls);
        assertEquals(List.of("a", "b", "c"), subscriber.getReceivedOnNext().stream().map(Item::key).toList());
    }

    @Test
    void aWakeupEndsTheWaitBeforeThePoll() {
        Sinks.Many<Object> wakeups = Sinks.many().multicast().directBestEffort();
        String name = TestDatabase.uniqueName("wake");
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(TestDatabase.pool(), String.class)
                .config(WorkQueueConfig.builder(name).tablePrefix(prefix).build())
                .wakeups(wakeups.asFlux())
                .build();
        ((PostgresWorkQueue<String>) queue).look().disableForTests(); // its connections are not counted here
        ReactiveWorkQueue<String> other = Queues.over(TestDatabase.pool(), prefix, name, b -> b);
        other.enqueueKeys("a").block(WAIT);
        TestSubscriber<Item<String>> subscriber = TestSubscriber.builder().initialRequest(100).build();

        queue.claimStream(LEASE, Duration.ofMinutes(10)).subscribe(subscriber);
        awaitReceived(subscriber, 1);
        other.enqueueKeys("b").block(WAIT);
        Poll.until(WAIT, "the stream to wait for work", () -> wakeups.currentSubscriberCount() > 0);
        wakeups.tryEmitNext("work");

        awaitReceived(subscriber, 2); // well before the ten-minute poll
        subscriber.cancel();
        assertEquals(List.of("a", "b"), subscriber.getReceivedOnNext().stream().map(Item::key).toList());
    }

    @Test
    void cancellingTheStreamStopsClaiming() {
        Sinks.Many<Object> wakeups = Sinks.many().multicast().directBestEffort();
        String name = TestDatabase.uniqueName("cancel");
        CountingConnectionFactory factory = new CountingConnectionFactory(TestDatabase.pool());
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(factory, String.class)
                .config(WorkQueueConfig.builder(name).tablePrefix(prefix).build())
                .wakeups(wakeups.asFlux())
                .build();
        ((PostgresWorkQueue<String>) queue).look().disableForTests(); // its connections are not counted here
        ReactiveWorkQueue<String> other = Queues.over(TestDatabase.pool(), prefix, name, b -> b);
        other.enqueueKeys("a").block(WAIT);
        TestSubscriber<Item<String>> subscriber = TestSubscriber.builder().initialRequest(100).build();

        queue.claimStream(LEASE, Duration.ofMinutes(10)).subscribe(subscriber);
        awaitReceived(subscriber, 1);
        Poll.until(WAIT, "the stream to wait for work", () -> wakeups.currentSubscriberCount() > 0);
        // No claim is in flight now: the stream waits for a wakeup (or ten minutes).
        subscriber.cancel();
        other.enqueueKeys("late").block(WAIT);
        wakeups.tryEmitNext("work"); // a live stream claims "late" at once (see aWakeupEndsTheWaitBeforeThePoll)

        // An absence has no event to await: watch for a while.
        Poll.during(Duration.ofSeconds(1), "no claim after cancel", () -> factory.creates() == 1
                && "true".equals(Queues.column(prefix, other, "late", "lease_until = 'epoch'")));
        assertEquals(1, other.stats().block(WAIT).ready(), "the late key is still there for someone else");
        assertEquals(1, subscriber.getReceivedOnNext().size());
    }

    @Test
    void aNonRetryableErrorTerminatesTheStream() {
        String missingTable = TestDatabase.uniquePrefix(); // valid, never created
        ReactiveWorkQueue<String> queue = Queues.fresh(missingTable, "missing");

        StepVerifier.create(queue.claimStream(LEASE, Duration.ofMillis(100)))
                .expectErrorSatisfies(e -> assertEquals("42P01", SqlStates.sqlState(e), e.toString()))
                .verify(WAIT);
    }

    @Test
    void anErrorAfterItemsStillTerminatesTheStream() {
        String isolated = TestDatabase.createTable();
        ReactiveWorkQueue<String> queue = Queues.fresh(isolated, "fatal-later");
        queue.enqueueKeys("a").block(WAIT);
        TestSubscriber<Item<String>> subscriber = TestSubscriber.builder().initialRequest(100).build();

        queue.claimStream(LEASE, Duration.ofMillis(50)).subscribe(subscriber);
        awaitReceived(subscriber, 1);
        Faults.failRows(isolated, "UPDATE", Integer.MAX_VALUE, "P0001");
        queue.enqueueKeys("b").block(WAIT);

        Poll.until(WAIT, "the stream to terminate", subscriber::isTerminated);
        assertEquals("P0001", SqlStates.sqlState(subscriber.expectTerminalError()));
        assertEquals(1, subscriber.getReceivedOnNext().size());
    }

    @Test
    void aRetryableErrorIsRetriedAndTheStreamContinues() {
        for (String sqlState : List.of(SqlStates.SERIALIZATION_FAILURE, SqlStates.DEADLOCK_DETECTED)) {
            String isolated = TestDatabase.createTable();
            ReactiveWorkQueue<String> queue = Queues.fresh(isolated, "retry");
            queue.enqueueKeys("a").block(WAIT);
            Faults.failRows(isolated, "UPDATE", 2, sqlState);
            TestSubscriber<Item<String>> subscriber = TestSubscriber.builder().initialRequest(100).build();

            queue.claimStream(LEASE, Duration.ofMillis(100)).subscribe(subscriber);
            awaitReceived(subscriber, 1);
            subscriber.cancel();

            assertEquals(Item.of("a", 0, 1, false), subscriber.getReceivedOnNext().get(0),
                    "the failed claims left no trace (" + sqlState + ")");
            assertEquals(3L, Faults.rowsSeen(isolated, "UPDATE"), "two failed claims, then one that leased");
        }
    }

    @Test
    void aLostConnectionIsRetriedAndTheStreamContinues() {
        String isolated = TestDatabase.createTable();
        ReactiveWorkQueue<String> queue = Queues.fresh(isolated, "lost");
        queue.enqueueKeys("a").block(WAIT);
        Faults.dropConnectionOnRows(isolated, "UPDATE", 1);
        TestSubscriber<Item<String>> subscriber = TestSubscriber.builder().initialRequest(100).build();

        queue.claimStream(LEASE, Duration.ofMillis(100)).subscribe(subscriber);
        awaitReceived(subscriber, 1);
        subscriber.cancel();

        assertEquals(Item.of("a", 0, 1, false), subscriber.getReceivedOnNext().get(0));
        assertEquals(2L, Faults.rowsSeen(isolated, "UPDATE"), "a claim on a connection that died, then one that leased");
    }
}
