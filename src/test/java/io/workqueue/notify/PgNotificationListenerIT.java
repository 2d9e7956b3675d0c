package io.workqueue.notify;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.r2dbc.postgresql.api.Notification;
import io.workqueue.InvalidConfigException;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.testing.Poll;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Subscription;
import reactor.core.Disposable;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import org.junit.jupiter.api.extension.ExtendWith;
import io.workqueue.testing.ExpectedLogs;

@ExtendWith(ExpectedLogs.class)
class PgNotificationListenerIT {
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private static String prefix;
    private final List<PgNotificationListener> listeners = new CopyOnWriteArrayList<>();
    private final List<Disposable> subscriptions = new CopyOnWriteArrayList<>();

    @BeforeAll
    static void createTable() {
        prefix = TestDatabase.createTable();
    }

    @AfterEach
    void closeListeners() {
        subscriptions.forEach(Disposable::dispose);
        listeners.forEach(l -> l.close().block(TIMEOUT));
    }

    private static String uniqueChannel() {
        return TestDatabase.uniquePrefix();
    }

    private PgNotificationListener listener(String channel) {
        PgNotificationListener listener = PgNotificationListener.builder(TestDatabase.plain())
                .channel(channel)
                .reconnectBackoff(Duration.ofMillis(50), Duration.ofMillis(500))
                .build();
        listeners.add(listener);
        return listener;
    }

    private static ReactiveWorkQueue<String> queue(String channel, PgNotificationListener listener) {
        WorkQueueConfig.Builder config = WorkQueueConfig.builder(TestDatabase.uniqueName("notify")).tablePrefix(prefix);
        if (channel != null) {
            config.notifyChannel(channel);
        }
        var builder = ReactiveWorkQueue.builder(TestDatabase.pool(), String.class).config(config.build());
        if (listener != null) {
            builder.wakeups(listener.wakeups());
        }
        return builder.build();
    }

    /**
     * Subscribes to the listener's wakeups and waits for the session to be established. Call it
     * before anything else subscribes to the listener: the wakeups are hot, and a session another
     * subscription started may be established before this one is registered, and never heard.
     */
    private void awaitSession(PgNotificationListener listener) {
        AtomicInteger sessions = new AtomicInteger();
        subscriptions.add(listener.wakeups()
                .filter(w -> w == PgNotificationListener.SESSION_ESTABLISHED)
                .subscribe(w -> sessions.incrementAndGet()));
        Poll.until(TIMEOUT, "LISTEN session established", () -> sessions.get() > 0);
    }

    @Test
    void anEnqueueWakesAWaitThroughARealListener() {
        String channel = uniqueChannel();
        PgNotificationListener listener = listener(channel);
        ReactiveWorkQueue<String> queue = queue(channel, listener);
        awaitSession(listener);
        queue.awaitWork(Duration.ofMillis(200)).block(TIMEOUT); // the queue subscribes its wakeups on the first wait

        long start = System.nanoTime();
        Mono<Void> wait = queue.awaitWork(Duration.ofSeconds(30)).cache();
        wait.subscribe();
        queue.enqueueKeys("wake-me").block(TIMEOUT);
        wait.block(TIMEOUT);
        long elapsedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertTrue(elapsedMillis < 1_000, "woken after " + elapsedMillis + " ms; the poll was 30 s");
    }

    @Test
    void withoutAChannelTheSameWaitRunsOutItsPoll() {
        String channel = uniqueChannel();
        PgNotificationListener listener = listener(channel);
        ReactiveWorkQueue<String> queue = queue(null, listener); // enqueues send no notification
        awaitSession(listener);
        queue.awaitWork(Duration.ofMillis(200)).block(TIMEOUT);

        long start = System.nanoTime();
        Mono<Void> wait = queue.awaitWork(Duration.ofSeconds(2)).cache();
        wait.subscribe();
        queue.enqueueKeys("nobody-hears").block(TIMEOUT);
        wait.block(TIMEOUT);
        long elapsedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertTrue(elapsedMillis >= 1_900, "completed after " + elapsedMillis + " ms without any notification");
    }

    @Test
    void aThousandConcurrentEnqueuesSendFarFewerNotificationsThanCalls() {
        String channel = uniqueChannel();
        PgNotificationListener listener = listener(channel);
        ReactiveWorkQueue<String> queue = queue(channel, null);
        AtomicInteger received = new AtomicInteger();
        awaitSession(listener);
        subscriptions.add(listener.notifications().subscribe(n -> received.incrementAndGet()));

        Flux.range(0, 1_000)
                .flatMap(i -> queue.enqueueKeys("k" + i), 1_000)
                .then()
                .block(TIMEOUT);
        assertEquals(1_000L, queue.stats().block(TIMEOUT).pending());
        // The notification announcing the last writes leaves after them, debounced, from the
        // queue's own connection: closing the queue sends it at once and completes once it has
        // committed, so the sentinel below commits after it and is queued behind it (notifications
        // are delivered in commit order). Without this the sentinel could overtake it.
        queue.close().block(TIMEOUT);
        // A sentinel from another session marks the end.
        TestDatabase.execute("SELECT pg_notify('" + channel + "', 'end')");
        List<Notification> seen = new CopyOnWriteArrayList<>();
        subscriptions.add(listener.notifications().subscribe(seen::add));
        TestDatabase.execute("SELECT pg_notify('" + channel + "', 'end')");
        Poll.until(TIMEOUT, "sentinel", () -> seen.stream().anyMatch(n -> "end".equals(n.getParameter())));

        int notifications = received.get() - 2;
        assertTrue(notifications >= 1, "at least one notification");
        assertTrue(notifications <= 100, notifications + " notifications for 1,000 enqueue calls");
    }

    @Test
    void aKilledBackendIsReplacedAndLaterNotificationsArrive() {
        String channel = uniqueChannel();
        assertReconnectsAfterItsBackendIsKilled(listener(channel), channel);
    }

    @Test
    void aForeverReconnectCeilingStillReconnects() {
        String channel = uniqueChannel();
        PgNotificationListener listener = PgNotificationListener.builder(TestDatabase.plain())
                .channel(channel)
                .reconnectBackoff(Duration.ofMillis(50), Duration.ofSeconds(Long.MAX_VALUE, 999_999_999))
                .build();
        listeners.add(listener);
        assertReconnectsAfterItsBackendIsKilled(listener, channel);
    }

    @Test
    void aForeverHealthCheckStillListens() {
        String channel = uniqueChannel();
        Duration forever = Duration.ofSeconds(Long.MAX_VALUE, 999_999_999);
        PgNotificationListener listener = PgNotificationListener.builder(TestDatabase.plain())
                .channel(channel)
                .healthCheck(forever, forever)
                .build();
        listeners.add(listener);
        List<String> payloads = new CopyOnWriteArrayList<>();
        awaitSession(listener);
        subscriptions.add(listener.notifications().subscribe(n -> payloads.add(n.getParameter())));

        TestDatabase.execute("SELECT pg_notify('" + channel + "', 'hello')");
        Poll.until(TIMEOUT, "the notification", () -> payloads.contains("hello"));
    }

    /** Kills the listener's backend and expects a second session and notifications after it. */
    private void assertReconnectsAfterItsBackendIsKilled(PgNotificationListener listener, String channel) {
        AtomicInteger sessions = new AtomicInteger();
        List<String> payloads = new CopyOnWriteArrayList<>();
        AtomicInteger terminations = new AtomicInteger();
        subscriptions.add(listener.wakeups().subscribe(
                w -> {
                    if (w == PgNotificationListener.SESSION_ESTABLISHED) {
                        sessions.incrementAndGet();
                    } else {
                        payloads.add(((Notification) w).getParameter());
                    }
                },
                e -> terminations.incrementAndGet(),
                terminations::incrementAndGet));
        Poll.until(TIMEOUT, "first session", () -> sessions.get() == 1);

        long killed = TestDatabase.queryLong(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE query = $1", "LISTEN " + channel);
        assertEquals(1L, killed, "the listener's backend was found and terminated");

        Poll.until(TIMEOUT, "session re-established after pg_terminate_backend",
                () -> sessions.get() == 2 || terminations.get() > 0);
        assertEquals(0, terminations.get(), "subscribers never see a lost connection as completion or error");
        assertEquals(2, sessions.get());
        TestDatabase.execute("SELECT pg_notify('" + channel + "', 'after')");
        Poll.until(TIMEOUT, "notification after reconnect", () -> payloads.contains("after"));
        assertEquals(0, terminations.get(), "subscribers never see a lost connection as completion or error");
    }

    @Test
    void aClaimStreamFedByWakeupsPicksUpAFreshKeyPromptly() {
        String channel = uniqueChannel();
        PgNotificationListener listener = listener(channel);
        ReactiveWorkQueue<String> queue = queue(channel, listener);
        awaitSession(listener);
        List<Item<String>> received = new CopyOnWriteArrayList<>();
        subscriptions.add(queue.claimStream(Duration.ofMinutes(1), Duration.ofSeconds(30)).subscribe(received::add));
        // Let the stream come back empty and settle into its 30 s wait.
        Poll.until(TIMEOUT, "empty queue", () -> queue.stats().block(TIMEOUT).pending() == 0);

        for (String key : List.of("first", "second")) {
            long start = System.nanoTime();
            queue.enqueueKeys(key).block(TIMEOUT);
            Poll.until(TIMEOUT, key + " claimed", () -> received.stream().anyMatch(i -> i.key().equals(key)));
            long elapsedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertTrue(elapsedMillis < 2_000, key + " claimed after " + elapsedMillis + " ms; the poll is 30 s");
        }
    }

    @Test
    void closeCompletesSubscribersAndReleasesTheConnection() {
        String channel = uniqueChannel();
        PgNotificationListener listener = listener(channel);
        awaitSession(listener);
        AtomicInteger completed = new AtomicInteger();
        listener.notifications().subscribe(n -> {}, e -> {}, completed::incrementAndGet);
        listener.close().block(TIMEOUT);
        assertEquals(1, completed.get());
        Poll.until(TIMEOUT, "backend gone", () -> TestDatabase.queryLong(
                "SELECT count(*) FROM pg_stat_activity WHERE query = $1", "LISTEN " + channel) == 0);
    }

    /**
     * The subscriber whose subscription starts the session hears it established, however long its
     * subscribing takes. A test thread on a loaded machine can be held up inside
     * {@code onSubscribe} for milliseconds; the sink registers a subscriber only after that
     * returns, so a session started from {@code onSubscribe} could come up first and its
     * {@code SESSION_ESTABLISHED} go to nobody (a fault test waited 30 s for it in a CI-like run).
     * This subscriber stays in {@code onSubscribe} until the session delivers notifications, or two
     * seconds if it never starts meanwhile.
     */
    @Test
    void theSubscriberThatStartsTheSessionHearsItEstablishedHoweverSlowlyItSubscribes() {
        String channel = uniqueChannel();
        PgNotificationListener listener = listener(channel);
        AtomicInteger sessions = new AtomicInteger();
        AtomicBoolean upWhileSubscribing = new AtomicBoolean();
        BaseSubscriber<Object> slow = new BaseSubscriber<>() {
            @Override
            protected void hookOnSubscribe(Subscription subscription) {
                request(Long.MAX_VALUE);
                upWhileSubscribing.set(Poll.whether(Duration.ofSeconds(2), () -> delivers(listener)));
            }

            @Override
            protected void hookOnNext(Object wakeup) {
                if (wakeup == PgNotificationListener.SESSION_ESTABLISHED) {
                    sessions.incrementAndGet();
                }
            }
        };
        subscriptions.add(slow);
        listener.wakeups().subscribe(slow);

        Poll.until(TIMEOUT, "the first subscriber hears its session established", () -> sessions.get() == 1);
        assertFalse(upWhileSubscribing.get(), "the session starts once its first subscriber is registered, not before");
    }

    /** Whether the listener has a session that delivers what other sessions send. */
    private static boolean delivers(PgNotificationListener listener) {
        try {
            listener.verifyDelivery(Duration.ofMillis(500)).block(Duration.ofSeconds(5));
            return true;
        } catch (RuntimeException noSessionYet) {
            return false;
        }
    }

    @Test
    void nothingConnectsBeforeTheFirstSubscriber() {
        String channel = uniqueChannel();
        listener(channel);
        assertEquals(0L, TestDatabase.queryLong(
                "SELECT count(*) FROM pg_stat_activity WHERE query = $1", "LISTEN " + channel));
    }

    @Test
    void badChannelsAndPooledFactoriesAreRefusedAtBuild() {
        for (String bad : List.of("", "Upper", "1digit", "a b", "x; DROP TABLE y", "a\"b")) {
            assertThrows(InvalidConfigException.class,
                    () -> PgNotificationListener.builder(TestDatabase.plain()).channel(bad).build(), bad);
        }
        InvalidConfigException pooled = assertThrows(InvalidConfigException.class,
                () -> PgNotificationListener.builder(TestDatabase.pool()).channel("ok").build());
        assertTrue(pooled.getMessage().contains("non-pooled"));
        assertInstanceOf(InvalidConfigException.class, assertThrows(RuntimeException.class,
                () -> WorkQueueConfig.builder("q").notifyChannel("Bad Channel").build()));
    }

}
