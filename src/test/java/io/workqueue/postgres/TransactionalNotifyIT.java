package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.r2dbc.postgresql.api.Notification;
import io.r2dbc.spi.Connection;
import io.workqueue.Entry;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkQueueMeters;
import io.workqueue.internal.Notifier;
import io.workqueue.notify.PgNotificationListener;
import io.workqueue.testing.Poll;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import java.util.function.Function;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Wakeups that never put the database-wide notify lock into anybody's business transaction, against
 * a real server and a real LISTEN connection.
 *
 * <p>The observable: every notification carries the process id of the backend whose commit sent
 * it, and a transaction's queued notifications are sent by its own backend at its commit. So a
 * caller's transaction took the notify lock exactly when a notification arrives from the caller's
 * backend; the lock itself (an object lock on the database, taken inside the commit) never shows in
 * {@code pg_locks} while the transaction is open.
 */
class TransactionalNotifyIT {
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private static String prefix;
    private final List<PgNotificationListener> listeners = new CopyOnWriteArrayList<>();
    private final List<Disposable> subscriptions = new CopyOnWriteArrayList<>();
    private final List<ReactiveWorkQueue<?>> queues = new CopyOnWriteArrayList<>();

    @BeforeAll
    static void createTable() {
        prefix = TestDatabase.createTable();
    }

    @AfterEach
    void closeEverything() {
        queues.forEach(q -> q.close().block(TIMEOUT));
        subscriptions.forEach(Disposable::dispose);
        listeners.forEach(l -> l.close().block(TIMEOUT));
    }

    /** A listener on a fresh channel, its session established, recording every notification. */
    private final class Listening {
        final String channel = TestDatabase.uniquePrefix();
        final PgNotificationListener listener = PgNotificationListener.builder(TestDatabase.plain())
                .channel(channel)
                .reconnectBackoff(Duration.ofMillis(50), Duration.ofMillis(500))
                .build();
        final List<Notification> received = new CopyOnWriteArrayList<>();

        Listening() {
            listeners.add(listener);
            AtomicInteger sessions = new AtomicInteger();
            subscriptions.add(listener.notifications().subscribe(received::add));
            subscriptions.add(listener.wakeups()
                    .filter(w -> w == PgNotificationListener.SESSION_ESTABLISHED)
                    .subscribe(w -> sessions.incrementAndGet()));
            Poll.until(TIMEOUT, "LISTEN session established", () -> sessions.get() > 0);
        }

        /**
         * Every notification received before a sentinel sent from another session now, sentinel
         * excluded. Notifications arrive in commit order, so this is everything committed before.
         */
        List<Notification> beforeSentinel() {
            String mark = "end-" + System.nanoTime();
            TestDatabase.execute("SELECT pg_notify('" + channel + "', '" + mark + "')");
            Poll.until(TIMEOUT, "the sentinel", () -> received.stream().anyMatch(n -> mark.equals(n.getParameter())));
            List<Notification> before = new ArrayList<>();
            for (Notification n : received) {
                if (mark.equals(n.getParameter())) {
                    break;
                }
                if (!n.getParameter().startsWith("end-")) {
                    before.add(n);
                }
            }
            return before;
        }

        ReactiveWorkQueue<String> queue(UnaryOperator<WorkQueueConfig.Builder> tweak, SimpleMeterRegistry registry) {
            WorkQueueConfig config = tweak.apply(WorkQueueConfig.builder(TestDatabase.uniqueName("txnotify"))
                    .tablePrefix(prefix).notifyChannel(channel)).build();
            ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(TestDatabase.pool(), String.class)
                    .config(config).wakeups(listener.wakeups()).meterRegistry(registry).build();
            queues.add(queue);
            return queue;
        }

        ReactiveWorkQueue<String> queue(UnaryOperator<WorkQueueConfig.Builder> tweak) {
            return queue(tweak, new SimpleMeterRegistry());
        }
    }

    /** Runs {@code work} in a transaction on a fresh plain connection, then commits; returns its backend's pid. */
    private static int inCommittedTransaction(BiConsumer<Connection, Integer> work) {
        Connection connection = Mono.from(TestDatabase.plain().create()).block(TIMEOUT);
        try {
            int pid = Flux.from(connection.createStatement("SELECT pg_backend_pid()").execute())
                    .concatMap(r -> r.map((row, meta) -> row.get(0, Integer.class)))
                    .blockFirst(TIMEOUT);
            Mono.from(connection.beginTransaction()).block(TIMEOUT);
            work.accept(connection, pid);
            Mono.from(connection.commitTransaction()).block(TIMEOUT);
            return pid;
        } finally {
            Mono.from(connection.close()).block(TIMEOUT);
        }
    }

    private static long fromPid(List<Notification> notifications, int pid) {
        return notifications.stream().filter(n -> n.getProcessId() == pid).count();
    }

    @Test
    void aTransactionalEnqueueQueuesNoNotificationInTheCallersTransaction() {
        Listening listening = new Listening();
        ReactiveWorkQueue<String> queue = listening.queue(b -> b);

        int caller = inCommittedTransaction((connection, pid) ->
                queue.enqueue(connection, List.of(Entry.of("a"))).block(TIMEOUT));
        // The wakeup follows the commit, from the queue's own session.
        Poll.until(TIMEOUT, "the wakeup", () -> !listening.received.isEmpty());

        List<Notification> seen = listening.beforeSentinel();
        assertEquals(0, fromPid(seen, caller), "the caller's commit sent a notification: it took the notify lock");
        assertEquals(1, seen.size(), "one wakeup for the commit: " + seen);
        assertEquals(1L, queue.stats().block(TIMEOUT).pending());
    }

    @Test
    void theCallerCanAskForTheNotificationInItsOwnTransaction() {
        Listening listening = new Listening();
        ReactiveWorkQueue<String> queue = listening.queue(b -> b);

        int caller = inCommittedTransaction((connection, pid) -> {
            queue.enqueueNotifyingInTransaction(connection, List.of(Entry.of("a"))).block(TIMEOUT);
        });

        List<Notification> seen = listening.beforeSentinel();
        assertEquals(1, fromPid(seen, caller), "sent by the caller's commit: " + seen);
        assertEquals(1, seen.size(), "and by nobody else: " + seen);
    }

    @Test
    void aWaitingClaimStreamGetsATransactionalEnqueuePromptlyAfterTheCommit() {
        Listening listening = new Listening();
        ReactiveWorkQueue<String> queue = listening.queue(b -> b.minWakeInterval(Duration.ofMillis(1)));
        List<Item<String>> received = new CopyOnWriteArrayList<>();
        subscriptions.add(queue.claimStream(Duration.ofMinutes(1), Duration.ofSeconds(30)).subscribe(received::add));
        queue.awaitWork(Duration.ofMillis(200)).block(TIMEOUT); // the stream has claimed nothing and waits

        List<Long> millis = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            String key = "k" + i;
            long[] committed = new long[1];
            inCommittedTransaction((connection, pid) -> {
                queue.enqueue(connection, List.of(Entry.of(key))).block(TIMEOUT);
                committed[0] = System.nanoTime(); // the commit follows at once
            });
            Poll.until(TIMEOUT, key + " claimed", () -> received.stream().anyMatch(item -> item.key().equals(key)));
            millis.add(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - committed[0]));
        }
        // Generous: timing belongs to the benchmarks; without a wakeup each would wait out the 30 s poll.
        assertTrue(millis.stream().allMatch(ms -> ms < 2_000), "commit to claim, ms: " + millis);
    }

    @Test
    void aRolledBackTransactionIsNeverAnnounced() {
        Listening listening = new Listening();
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        ReactiveWorkQueue<String> queue = listening.queue(b -> b, registry);

        Connection connection = Mono.from(TestDatabase.plain().create()).block(TIMEOUT);
        try {
            Mono.from(connection.beginTransaction()).block(TIMEOUT);
            queue.enqueue(connection, List.of(Entry.of("gone"))).block(TIMEOUT);
            Mono.from(connection.rollbackTransaction()).block(TIMEOUT);
        } finally {
            Mono.from(connection.close()).block(TIMEOUT);
        }
        // The queue forgets the transaction once it has read how it ended; a notification for it
        // would have gone out then.
        Poll.until(TIMEOUT, "the transaction's end read", () -> ((PostgresWorkQueue<String>) queue).notifier().awaitedCount() == 0);
        queue.close().block(TIMEOUT);

        assertEquals(List.of(), listening.beforeSentinel());
        assertEquals(0.0, registry.get(WorkQueueMeters.NOTIFY_COMMITS).counter().count());
    }

    /**
     * A transaction on a fresh plain connection: its backend's pid into {@code pid}, then begin,
     * {@code work}, and commit (or, if {@code work} fails, roll back and fail).
     */
    private static Mono<Void> transaction(int[] pid, Function<Connection, Mono<Void>> work) {
        return Mono.usingWhen(TestDatabase.plain().create(),
                connection -> Flux.from(connection.createStatement("SELECT pg_backend_pid()").execute())
                        .concatMap(r -> r.map((row, meta) -> row.get(0, Integer.class)))
                        .next()
                        .doOnNext(p -> pid[0] = p)
                        .then(Mono.from(connection.beginTransaction()))
                        .then(work.apply(connection))
                        .then(Mono.from(connection.commitTransaction())),
                Connection::close,
                (connection, error) -> Mono.from(connection.rollbackTransaction()).then(Mono.from(connection.close())),
                Connection::close);
    }

    @Test
    void insideTheCallersBracketNothingIsHandedOverAndTheCommitIsAnnounced() {
        Listening listening = new Listening();
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        ReactiveWorkQueue<String> queue = listening.queue(b -> b.minWakeInterval(Duration.ofMillis(1)), registry);
        Notifier notifier = ((PostgresWorkQueue<String>) queue).notifier();
        List<Item<String>> claimed = new CopyOnWriteArrayList<>();
        subscriptions.add(queue.claimStream(Duration.ofMinutes(1), Duration.ofSeconds(30)).subscribe(claimed::add));
        queue.awaitWork(Duration.ofMillis(200)).block(TIMEOUT); // the stream has claimed nothing and waits

        int[] caller = new int[1];
        List<Integer> awaitedInside = new CopyOnWriteArrayList<>();
        ReactiveWorkQueue.announceAfterCommit(transaction(caller, connection -> queue.enqueue(connection, List.of(Entry.of("a")))
                        .then(queue.enqueue(connection, List.of(Entry.of("b"))))
                        .then(Mono.fromRunnable(() -> awaitedInside.add(notifier.awaitedCount())))))
                .block(TIMEOUT);

        // Without the 30 s poll: the wakeup the bracket announced hands both to the waiting stream.
        Poll.until(TIMEOUT, "both claimed", () -> claimed.size() == 2);
        assertEquals(List.of(0), awaitedInside, "a transaction was handed over to be asked about");
        List<Notification> seen = listening.beforeSentinel();
        assertEquals(0, fromPid(seen, caller[0]), "the caller's commit notified: it took the notify lock");
        assertEquals(1, seen.size(), "one wakeup for one committed transaction: " + seen);
        assertEquals(1.0, registry.get(WorkQueueMeters.NOTIFY_COMMITS).counter().count());
    }

    @Test
    void aBracketThatFailsAnnouncesNothing() {
        Listening listening = new Listening();
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        ReactiveWorkQueue<String> queue = listening.queue(b -> b, registry);
        Notifier notifier = ((PostgresWorkQueue<String>) queue).notifier();

        int[] caller = new int[1];
        Mono<Void> failing = ReactiveWorkQueue.announceAfterCommit(transaction(caller,
                connection -> queue.enqueue(connection, List.of(Entry.of("gone")))
                        .then(Mono.error(new IllegalStateException("a business rule failed")))));
        IllegalStateException error = assertThrows(IllegalStateException.class,
                () -> failing.block(TIMEOUT));
        assertEquals("a business rule failed", error.getMessage());
        assertEquals(0, notifier.awaitedCount(), "nothing handed over");
        queue.close().block(TIMEOUT); // would send a notification that was due

        assertEquals(List.of(), listening.beforeSentinel());
        assertEquals(0.0, registry.get(WorkQueueMeters.NOTIFY_COMMITS).counter().count());
        assertEquals(0L, queue.stats().block(TIMEOUT).pending(), "rolled back");
    }

    @Test
    void aBurstOfWritesFromOneInstanceSendsOneNotificationPerInterval() {
        Listening listening = new Listening();
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        Duration interval = Duration.ofMillis(500);
        ReactiveWorkQueue<String> queue = listening.queue(b -> b.minWakeInterval(interval), registry);

        long start = System.nanoTime();
        List<Integer> callers = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            String key = "k" + i;
            queue.enqueueKeys("g" + i).block(TIMEOUT); // each its own group-committed write
            callers.add(inCommittedTransaction((connection, pid) ->
                    queue.enqueue(connection, List.of(Entry.of(key))).block(TIMEOUT)));
        }
        long elapsed = System.nanoTime() - start;
        queue.close().block(TIMEOUT); // sends what is due now, rather than at the interval's end
        long closed = System.nanoTime() - start;

        List<Notification> seen = listening.beforeSentinel();
        for (int caller : callers) {
            assertEquals(0, fromPid(seen, caller), "a caller's commit notified");
        }
        long intervals = closed / interval.toNanos() + 1;
        assertTrue(!seen.isEmpty() && seen.size() <= intervals + 1, seen.size() + " notifications for 80 writes in "
                + TimeUnit.NANOSECONDS.toMillis(elapsed) + " ms, an interval of " + interval.toMillis() + " ms");
        assertEquals(seen.size(), (long) registry.get(WorkQueueMeters.NOTIFY_COMMITS).counter().count(),
                "the meter counts every notifying commit");
        assertEquals(seen.size(), registry.get(WorkQueueMeters.NOTIFY_COMMIT_LATENCY).timer().count());
        assertEquals(80L, queue.stats().block(TIMEOUT).pending());
    }

    @Test
    void aPollOnlyQueueWithAChannelSendsNothing() {
        Listening listening = new Listening();
        ReactiveWorkQueue<String> queue = listening.queue(b -> b.notifyOnEnqueue(false));

        queue.enqueueKeys("grouped").block(TIMEOUT);
        int caller = inCommittedTransaction((connection, pid) -> {
            queue.enqueue(connection, List.of(Entry.of("transactional"))).block(TIMEOUT);
            queue.enqueueNotifyingInTransaction(connection, List.of(Entry.of("asked"))).block(TIMEOUT);
        });
        queue.close().block(TIMEOUT); // a notifying queue would send what is due here

        assertEquals(List.of(), listening.beforeSentinel(), "caller " + caller);
        assertEquals(3L, queue.stats().block(TIMEOUT).pending());
    }
}
