package io.workqueue.faults;

import io.workqueue.testing.Poll;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.r2dbc.pool.ConnectionPool;
import io.workqueue.Entry;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.notify.PgNotificationListener;
import java.time.Duration;
import java.util.List;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import org.junit.jupiter.api.extension.ExtendWith;
import io.workqueue.testing.ExpectedLogs;

/**
 * Scenario 1: PostgreSQL goes down for a few seconds and comes back while four claimStream workers
 * drain 20,000 keys and a producer keeps enqueueing — once with a clean (fast) shutdown, once as a
 * crash (immediate shutdown: no checkpoint, crash recovery from the WAL on the next start). Nobody
 * restarts the workers or the producer: the pool discards the dead connections it validates,
 * claimStream backs off and carries on, enqueues during the outage fail (they do not hang) and the
 * producer retries them. Every enqueue and completion acknowledged before the outage is still in
 * the table after it, and every key is then accounted for.
 */
@ExtendWith(ExpectedLogs.class)
class ServerRestartFaultIT {
    private static final Logger log = LoggerFactory.getLogger(ServerRestartFaultIT.class);
    private static final int PRELOADED = 20_000;
    private static final int PRODUCED_BATCHES = 100;
    private static final int BATCH = 50;
    private static final Duration WRITE_TIMEOUT = Duration.ofSeconds(5);
    /** How long the server stays down, at least: long enough for claims, acknowledgements and enqueues to meet it. */
    private static final Duration OUTAGE = Duration.ofSeconds(2);

    private FaultServer server;
    private ConnectionPool pool;
    private PgNotificationListener listener;

    @AfterEach
    void restoreServer() {
        if (listener != null) {
            listener.close().block(Duration.ofSeconds(10));
        }
        if (pool != null) {
            pool.disposeLater().block(Duration.ofSeconds(30)); // bounded: a stuck close fails the test, not CI
        }
        if (server != null) {
            server.ensureRunning(); // whatever happened, leave the cluster up
        }
    }

    @Test
    void workersAndProducerRideOutARestartAndEveryKeyIsAccountedFor() {
        server = FaultServer.controllable();
        rideOut("server restart", server::stop);
    }

    @Test
    void everyAcknowledgedWriteSurvivesACrashAndEveryKeyIsAccountedFor() {
        server = FaultServer.controllable();
        rideOut("server crash", server::crash);
    }

    private void rideOut(String fault, Runnable takeDown) {
        String prefix = server.createTable();
        pool = server.pool(8);
        String channel = prefix + "_wake";
        listener = PgNotificationListener.builder(server.plain())
                .channel(channel)
                .reconnectBackoff(Duration.ofMillis(100), Duration.ofSeconds(1))
                .build();
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(pool, String.class)
                .config(WorkQueueConfig.builder("restart").tablePrefix(prefix).notifyChannel(channel)
                        .writeTimeout(WRITE_TIMEOUT).build())
                .wakeups(listener.wakeups())
                .build();
        Ledger ledger = new Ledger(fault);
        // Open the LISTEN session now (the queue subscribes only on its first short claim) and
        // count sessions: the restart must be followed by a new one.
        AtomicInteger sessions = new AtomicInteger();
        AtomicLong lastSessionAt = new AtomicLong();
        Disposable sessionCounter = listener.wakeups()
                .filter(signal -> signal == PgNotificationListener.SESSION_ESTABLISHED)
                .subscribe(signal -> {
                    lastSessionAt.set(System.nanoTime());
                    sessions.incrementAndGet();
                });
        Poll.until(Duration.ofSeconds(30), "the LISTEN session is established", () -> sessions.get() == 1);

        // A claimStream idling on an empty queue throughout: it is claiming (polling) when the server
        // goes, so its claims meet the outage whatever the busy workers happen to be doing, and it
        // must back off and carry on by itself.
        ReactiveWorkQueue<String> idle = ReactiveWorkQueue.builder(pool, String.class)
                .config(WorkQueueConfig.builder("restart-idle").tablePrefix(prefix).build())
                .build();
        AtomicLong idleClaimedAt = new AtomicLong();
        Queue<Throwable> idleFailed = new ConcurrentLinkedQueue<>();
        Disposable idleStream = idle.claimStream(Duration.ofSeconds(30), Duration.ofMillis(50))
                .subscribe(item -> idleClaimedAt.set(System.nanoTime()), idleFailed::add);

        try (Drain drain = new Drain(queue, ledger)) {
            drain.preload("pre-", PRELOADED);
            drain.startWorkers(4, Duration.ofSeconds(10), Duration.ofMillis(200));
            drain.startProducer("live-", PRODUCED_BATCHES, BATCH, Duration.ofMillis(40));
            drain.awaitCompletedAtLeast(PRELOADED / 4, Duration.ofSeconds(60));

            long upAt;
            long downAt;
            Set<String> enqueuedBefore;
            Set<String> completedBefore;
            try (FaultServer.Watch watch = server.watch()) {
                long stopAt = System.nanoTime();
                int failuresBefore = drain.enqueueFailures();
                // Due only once the server is down: the idle stream's first successful claim after
                // the outage hands it out.
                idle.enqueue(List.of(Entry.of("due-during-the-outage").withDelay(OUTAGE))).block(Duration.ofSeconds(10));
                enqueuedBefore = ledger.enqueuedSoFar();
                completedBefore = ledger.completedSoFar();
                takeDown.run();
                // The outage lasts at least OUTAGE and until enqueue callers have seen it as errors.
                Poll.until(Duration.ofSeconds(30), "enqueue callers get errors while the server is down",
                        () -> drain.enqueueFailures() >= failuresBefore + 2
                                && System.nanoTime() - stopAt >= OUTAGE.toNanos(), drain::progress);
                log.info("[{}] stopped mid-drain {}", fault, drain.progress());
                long startAt = System.nanoTime();
                server.start();
                Poll.until(Duration.ofSeconds(30), "the watch sees the server accept connections",
                        () -> watch.firstUpAfter(startAt) >= 0);
                downAt = watch.firstDownAfter(stopAt);
                upAt = watch.firstUpAfter(startAt);
            }
            log.info("[{}] the server refused connections for {} ms {}", fault,
                    (upAt - downAt) / 1_000_000, drain.progress());
            Ledger.assertSurvived(fault, enqueuedBefore, completedBefore, Ledger.readTable(server, prefix, queue));
            Poll.until(Duration.ofSeconds(60), "the listener re-establishes its LISTEN session",
                    () -> sessions.get() >= 2);
            long listenerBack = lastSessionAt.get();
            Poll.until(Duration.ofSeconds(60), "a worker completes a key after the restart",
                    () -> drain.firstCompletionAfter(upAt) >= 0, drain::progress);
            Poll.until(Duration.ofSeconds(60), "the producer commits a batch after the restart",
                    () -> drain.producerDone() || drain.firstEnqueueAfter(upAt) >= 0, drain::progress);

            Poll.until(Duration.ofSeconds(30), "the idle claimStream, which met the outage, claims again",
                    () -> !idleFailed.isEmpty() || idleClaimedAt.get() != 0);
            assertTrue(idleFailed.isEmpty(), () -> "claimStream stopped instead of backing off: " + idleFailed);
            long idleBack = idleClaimedAt.get();
            idleStream.dispose();

            drain.awaitDrained(Duration.ofSeconds(120));
            Duration workerRecovery = Duration.ofNanos(drain.firstCompletionAfter(upAt));
            long producerAfter = drain.firstEnqueueAfter(upAt);
            log.info("[" + fault + "] after the server was back: workers completed again within {} ms, the producer"
                            + " committed again within {}, the listener was listening again within {} ms, the idle"
                            + " claimStream claimed again within {} ms; during the"
                            + " outage {} enqueue attempts failed (slowest failure {} ms; kinds {}) and {}"
                            + " acknowledgements were retried",
                    workerRecovery.toMillis(),
                    producerAfter < 0 ? "n/a (it had finished)" : producerAfter / 1_000_000 + " ms",
                    Math.max(0, listenerBack - upAt) / 1_000_000,
                    (idleBack - upAt) / 1_000_000,
                    drain.enqueueFailures(), drain.slowestEnqueueFailure().toMillis(), drain.enqueueErrorKinds(),
                    drain.completeRetries());
            sessionCounter.dispose();
            assertTrue(drain.slowestEnqueueFailure().compareTo(WRITE_TIMEOUT.plusSeconds(1)) <= 0,
                    "an enqueue during the outage errs within its timeout, it does not hang: " + drain.slowestEnqueueFailure());
            drain.close();

            ledger.assertExact(Ledger.readTable(server, prefix, queue), queue.stats().block(Duration.ofSeconds(30)),
                    workerRecovery);
        }
    }
}
