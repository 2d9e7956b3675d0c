package io.workqueue.faults;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.spi.ValidationDepth;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkerOptions;
import io.workqueue.notify.PgNotificationListener;
import io.workqueue.testing.Poll;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.junit.jupiter.api.extension.ExtendWith;
import io.workqueue.testing.ExpectedLogs;

/**
 * Scenario: a primary with a synchronous streaming standby; the queue, four claimStream workers and
 * a producer connect through r2dbc-postgresql's multi-host URL ({@code targetServerType=primary}).
 * Mid-drain the primary's postmaster is SIGKILLed and the standby promoted. Nobody restarts the
 * workers or the producer. With synchronous replication every enqueue and completion acknowledged
 * before the kill is on the new primary, and every key is then accounted for.
 */
@ExtendWith(ExpectedLogs.class)
class FailoverFaultIT {
    private static final Logger log = LoggerFactory.getLogger(FailoverFaultIT.class);
    private static final int PRELOADED = 10_000;

    private HaPair pair;
    private ConnectionPool pool;
    private String prefix;
    private ReactiveWorkQueue<String> queue;
    private PgNotificationListener listener;
    /** When the listener's LISTEN sessions were established, and when it heard the queue's notifications. */
    private final Queue<Long> sessions = new ConcurrentLinkedQueue<>();
    private final Queue<Long> notifications = new ConcurrentLinkedQueue<>();

    /**
     * Makes the pair, a queue through the multi-host URL, and a drain of four workers and a live
     * producer; returns once a quarter of the preload is completed, so the fault lands mid-drain.
     */
    private Drain drainingThroughThePair(boolean synchronous, String name, Ledger ledger) {
        pair = HaPair.create(synchronous);
        FaultServer both = FaultServer.at(pair.failoverUrl());
        prefix = both.createTable();
        pool = both.pool(8);
        // The listener on the same multi-host URL, unpooled, with its default back-off.
        String channel = prefix + "_wake";
        listener = PgNotificationListener.builder(both.plain()).channel(channel).build();
        listener.wakeups().subscribe(signal -> (signal == PgNotificationListener.SESSION_ESTABLISHED
                ? sessions : notifications).add(System.nanoTime()));
        Poll.until(Duration.ofSeconds(30), "the listener listens", () -> !sessions.isEmpty());
        queue = ReactiveWorkQueue.builder(pool, String.class)
                .config(WorkQueueConfig.builder(name).tablePrefix(prefix).notifyChannel(channel)
                        .writeTimeout(Duration.ofSeconds(5)).build())
                .wakeups(listener.wakeups())
                .build();
        Drain drain = new Drain(queue, ledger);
        try {
            drain.preload("pre-", PRELOADED);
            drain.startWorkers(4, Duration.ofSeconds(5), Duration.ofMillis(200));
            drain.startProducer("live-", 100, 50, Duration.ofMillis(40));
            drain.awaitCompletedAtLeast(PRELOADED / 4, Duration.ofSeconds(60));
            return drain;
        } catch (RuntimeException | AssertionError e) {
            drain.close();
            throw e;
        }
    }

    @AfterEach
    void tearDown() {
        if (listener != null) {
            listener.close().block(Duration.ofSeconds(10));
        }
        if (pool != null) {
            pool.disposeLater().block(Duration.ofSeconds(30));
        }
        if (pair != null) {
            pair.close();
        }
    }

    /**
     * The listener across the failover: its session died with the old primary, and it reconnects
     * through the multi-host URL, which finds no primary until the promotion. Waits until it
     * listens again and proves delivery (a notification sent through the same URL comes back).
     * Returns, in milliseconds, {@code [listening again after the kill, the same after the promotion
     * was seen (negative: before), the queue's first notification heard after the promotion (-1 if
     * none came), the delivery probe's round trip]}.
     */
    private long[] listenerRecovery(long killedAt, long promotedAt) {
        Poll.until(Duration.ofSeconds(60), "the listener listens again after the kill",
                () -> first(sessions, killedAt) >= 0);
        long listening = first(sessions, killedAt);
        long probing = System.nanoTime();
        listener.verifyDelivery(Duration.ofSeconds(10)).block(Duration.ofSeconds(30));
        long probed = System.nanoTime() - probing;
        long notified = first(notifications, Math.max(listening, promotedAt));
        return new long[] {(listening - killedAt) / 1_000_000, (listening - promotedAt) / 1_000_000,
                notified < 0 ? -1 : (notified - promotedAt) / 1_000_000, probed / 1_000_000};
    }

    private static long first(Queue<Long> times, long since) {
        return times.stream().filter(t -> t > since).min(Long::compare).orElse(-1L);
    }

    @Test
    void withSynchronousReplicationAFailoverLosesNoAcknowledgedWrite() {
        Ledger ledger = new Ledger("failover");
        try (Drain drain = drainingThroughThePair(true, "failover", ledger)) {

            Set<String> enqueuedBefore = ledger.enqueuedSoFar();
            Set<String> completedBefore = ledger.completedSoFar();
            long killedAt = System.nanoTime();
            pair.killPrimary();
            pair.promoteStandby();
            long promotedAt = System.nanoTime();
            log.info("[failover] primary killed, standby promoted within {} ms {}", (promotedAt - killedAt) / 1_000_000,
                    drain.progress());
            FaultServer survivor = FaultServer.at(pair.standbyUrl());
            Ledger.assertSurvived("failover", enqueuedBefore, completedBefore, Ledger.readTable(survivor, prefix, queue));

            Poll.until(Duration.ofSeconds(60), "a worker completes a key on the new primary",
                    () -> drain.firstCompletionAfter(promotedAt) >= 0, drain::progress);
            Poll.until(Duration.ofSeconds(60), "the producer commits a batch on the new primary",
                    () -> drain.producerDone() || drain.firstEnqueueAfter(promotedAt) >= 0, drain::progress);
            long[] listenerBack = listenerRecovery(killedAt, promotedAt);
            drain.awaitDrained(Duration.ofSeconds(120));
            Duration workerRecovery = Duration.ofNanos(drain.firstCompletionAfter(promotedAt));
            long producerAfter = drain.firstEnqueueAfter(promotedAt);
            log.info("[failover] after the promotion: workers completed again within {} ms, the producer committed"
                            + " again within {}; the listener listened again {} ms after the kill ({} ms after the"
                            + " promotion was seen), heard the queue's first notification {} ms after it, and a"
                            + " delivery probe came back in {} ms; {} enqueue attempts failed, {} acknowledgements"
                            + " were retried",
                    workerRecovery.toMillis(),
                    producerAfter < 0 ? "n/a (it had finished)" : producerAfter / 1_000_000 + " ms",
                    listenerBack[0], listenerBack[1], listenerBack[2], listenerBack[3],
                    drain.enqueueFailures(), drain.completeRetries());
            drain.close();
            ledger.assertExact(Ledger.readTable(survivor, prefix, queue), queue.stats().block(Duration.ofSeconds(30)),
                    workerRecovery);
        }
    }

    /**
     * The same failover with asynchronous replication: what the primary had committed but not yet
     * shipped is lost with it, so this measures the loss rather than asserting none. What it does
     * assert: the queue carries on by itself on the new primary, and what is enqueued after the
     * promotion is all processed.
     */
    @Test
    void withAsynchronousReplicationTheQueueCarriesOnAndTheLossIsMeasured() {
        Ledger ledger = new Ledger("failover, asynchronous");
        try (Drain drain = drainingThroughThePair(false, "failover-async", ledger)) {

            long killedAt = System.nanoTime();
            pair.killPrimary();
            pair.promoteStandby();
            long promotedAt = System.nanoTime();
            // Taken once the standby is promoted, not before the kill: SIGKILL takes the postmaster
            // only, and a backend in the middle of a commit finishes it before it notices, so the
            // old primary can still acknowledge writes it never ships. Counted before the
            // promotion, such a batch is "lost with the primary"; counted after, it was waited for
            // forever (seen once: 50 of 15,000 keys, one producer batch).
            Set<String> enqueuedBefore = ledger.enqueuedSoFar();
            Set<String> completedBefore = ledger.completedSoFar();
            FaultServer survivor = FaultServer.at(pair.standbyUrl());
            long[] lost = Ledger.countLost(enqueuedBefore, completedBefore, Ledger.readTable(survivor, prefix, queue));

            Poll.until(Duration.ofSeconds(60), "a worker completes a key on the new primary",
                    () -> drain.firstCompletionAfter(promotedAt) >= 0, drain::progress);
            long[] listenerBack = listenerRecovery(killedAt, promotedAt);
            Poll.until(Duration.ofSeconds(120), "everything the producer enqueued after the promotion is completed",
                    () -> drain.producerDone() && ledger.completedSoFar().containsAll(
                            ledger.enqueuedSoFar().stream().filter(k -> !enqueuedBefore.contains(k)).toList()),
                    () -> {
                        // What the missing keys look like on the new primary, should this ever fail.
                        List<String> missing = ledger.enqueuedSoFar().stream()
                                .filter(k -> !enqueuedBefore.contains(k) && !ledger.completedSoFar().contains(k))
                                .sorted().limit(5).toList();
                        Map<String, Ledger.TableRow> rows = Ledger.readTable(survivor, prefix, queue);
                        return drain.progress() + "; missing, with their rows: "
                                + missing.stream().map(k -> k + "=" + rows.get(k)).toList();
                    });
            log.info("[failover, asynchronous] of {} enqueues and {} completions acknowledged before the promotion, {} and {}"
                            + " were lost with the primary; workers completed again within {} ms of the promotion, the"
                            + " listener listened again {} ms after the kill ({} ms after the promotion was seen),"
                            + " heard the queue's first notification {} ms after it, and a delivery probe came back in"
                            + " {} ms",
                    enqueuedBefore.size(), completedBefore.size(), lost[0], lost[1],
                    drain.firstCompletionAfter(promotedAt) / 1_000_000, listenerBack[0], listenerBack[1],
                    listenerBack[2], listenerBack[3]);
        }
    }

    /**
     * The failover as a fleet of {@code process()} workers meets it: four of them, at about 500 keys
     * a second, through a pool validated the way r2dbc-pool and Spring Boot validate by default — by
     * asking the connection ({@code validate(depth)}), not by a query. When the primary dies, every
     * idle pooled connection is dead at once, and an acquisition that meets only dead ones fails
     * with the pool's own "Connection validation failed", which has no SQLSTATE; closing a dead one
     * can fail with Reactor Netty's {@code AbortedException}. Every worker stream must outlive the
     * failover by itself, and every key must be accounted for.
     */
    @ParameterizedTest
    @EnumSource(ValidationDepth.class)
    void everyProcessWorkerOverADepthValidatedPoolOutlivesTheFailover(ValidationDepth depth) {
        pair = HaPair.create(true);
        FaultServer both = FaultServer.at(pair.failoverUrl());
        prefix = both.createTable();
        pool = FaultServer.depthValidatingPool(both.plain(), 10, depth);
        queue = ReactiveWorkQueue.builder(pool, String.class)
                .config(WorkQueueConfig.builder("failover-process").tablePrefix(prefix)
                        .writeTimeout(Duration.ofSeconds(5)).build())
                .build();
        String scenario = "failover, process() over a pool validated at depth " + depth;
        Ledger ledger = new Ledger(scenario);
        int workers = 4;
        try (Drain drain = new Drain(queue, ledger)) {
            drain.preload("pre-", 2_000);
            for (int w = 0; w < workers; w++) {
                drain.startProcessWorker("process-" + w, WorkerOptions.builder().concurrency(8).claimBatch(8)
                        .lease(Duration.ofSeconds(5)).poll(Duration.ofMillis(200)).build());
            }
            // 25 keys every 50 ms: about 500 a second for 30 s, so the fault meets a fleet in full
            // swing, claiming as fast as keys arrive.
            drain.startProducer("live-", 600, 25, Duration.ofMillis(50));
            drain.awaitCompletedAtLeast(4_000, Duration.ofSeconds(60));

            Set<String> enqueuedBefore = ledger.enqueuedSoFar();
            Set<String> completedBefore = ledger.completedSoFar();
            long killedAt = System.nanoTime();
            pair.killPrimary();
            pair.promoteStandby();
            long promotedAt = System.nanoTime();
            log.info("[{}] primary killed, standby promoted within {} ms {}", scenario,
                    (promotedAt - killedAt) / 1_000_000, drain.progress());
            FaultServer survivor = FaultServer.at(pair.standbyUrl());
            Ledger.assertSurvived(scenario, enqueuedBefore, completedBefore, Ledger.readTable(survivor, prefix, queue));

            // Whatever ends a stream, the rest drain the queue; the count of ended streams is the result.
            Poll.until(Duration.ofSeconds(120), "every key completed (or every worker stream ended)",
                    () -> drain.failures().size() >= workers
                            || (drain.producerDone() && ledger.completedKeys() == ledger.enqueuedKeys()),
                    drain::progress);
            List<Throwable> ended = drain.failures();
            log.info("[{}] {} of {} worker streams ended{}", scenario, ended.size(), workers, ended.isEmpty() ? ""
                    : ": " + ended.stream().map(Throwable::toString).collect(Collectors.joining("; ")));
            assertTrue(ended.isEmpty(), () -> ended.size() + " of " + workers + " process() streams ended in the"
                    + " failover instead of backing off: " + ended);
            Duration workerRecovery = Duration.ofNanos(drain.firstCompletionAfter(promotedAt));
            drain.close();
            ledger.assertExact(Ledger.readTable(survivor, prefix, queue), queue.stats().block(Duration.ofSeconds(30)),
                    workerRecovery);
        }
    }
}
