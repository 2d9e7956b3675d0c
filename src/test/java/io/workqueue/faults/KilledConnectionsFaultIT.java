package io.workqueue.faults;

import io.workqueue.testing.Poll;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.r2dbc.pool.ConnectionPool;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.notify.PgNotificationListener;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import org.junit.jupiter.api.extension.ExtendWith;
import io.workqueue.testing.ExpectedLogs;

/**
 * Scenario 2: every client backend of the database is terminated ({@code pg_terminate_backend}) at
 * random moments while four claimStream workers drain 20,000 keys and a producer keeps enqueueing.
 * Statements in flight die with 57P01, idle pooled connections die silently (the pool's validation
 * finds them), the LISTEN session dies; everybody recovers by themselves and every key is accounted
 * for. A claim whose answer was lost with its connection leaves its items leased: they are handed
 * out again, flagged reclaimed, once the lease lapses.
 */
@ExtendWith(ExpectedLogs.class)
class KilledConnectionsFaultIT {
    private static final Logger log = LoggerFactory.getLogger(KilledConnectionsFaultIT.class);
    private static final int PRELOADED = 20_000;
    private static final int ROUNDS = 6;

    private FaultServer server;
    private ConnectionPool pool;
    private PgNotificationListener listener;

    @AfterEach
    void cleanUp() {
        if (listener != null) {
            listener.close().block(Duration.ofSeconds(10));
        }
        if (pool != null) {
            pool.disposeLater().block(Duration.ofSeconds(30)); // bounded: a stuck close fails the test, not CI
        }
        if (server != null) {
            server.ensureRunning();
        }
    }

    @Test
    void killingEveryBackendAtRandomMomentsLosesNothing() throws InterruptedException {
        server = FaultServer.controllable();
        String prefix = server.createTable();
        pool = server.pool(8);
        String channel = prefix + "_wake";
        listener = PgNotificationListener.builder(server.plain())
                .channel(channel)
                .reconnectBackoff(Duration.ofMillis(50), Duration.ofSeconds(1))
                .build();
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(pool, String.class)
                .config(WorkQueueConfig.builder("killed").tablePrefix(prefix).notifyChannel(channel)
                        .writeTimeout(Duration.ofSeconds(5)).build())
                .wakeups(listener.wakeups())
                .build();
        AtomicInteger sessions = new AtomicInteger();
        Disposable sessionCounter = listener.wakeups()
                .filter(signal -> signal == PgNotificationListener.SESSION_ESTABLISHED)
                .subscribe(signal -> sessions.incrementAndGet());
        Poll.until(Duration.ofSeconds(30), "the LISTEN session is established", () -> sessions.get() == 1);

        long seed = System.nanoTime();
        Random random = new Random(seed);
        log.info("[connections killed] kill moments drawn with seed {}", seed);
        Ledger ledger = new Ledger("connections killed");
        try (Drain drain = new Drain(queue, ledger)) {
            drain.preload("pre-", PRELOADED);
            drain.startWorkers(4, Duration.ofSeconds(5), Duration.ofMillis(200));
            drain.startProducer("live-", 100, 50, Duration.ofMillis(40));

            List<Long> killedAt = new ArrayList<>();
            long terminated = 0;
            for (int round = 0; round < ROUNDS; round++) {
                Thread.sleep(150 + random.nextInt(500)); // the fault's timing is the random variable here
                drain.assertNoWorkerFailed();
                long at = System.nanoTime();
                long n = server.terminateClientBackends();
                killedAt.add(at);
                terminated += n;
                log.info("[connections killed] round {}: terminated {} backends {}", round + 1, n, drain.progress());
            }
            assertTrue(terminated > 0, "the rounds found backends to terminate");
            long lastKill = killedAt.get(killedAt.size() - 1);
            Poll.until(Duration.ofSeconds(60), "a worker completes a key after the last kill",
                    () -> drain.firstCompletionAfter(lastKill) >= 0, drain::progress);
            Poll.until(Duration.ofSeconds(30), "the listener re-establishes its LISTEN session",
                    () -> sessions.get() >= 2);
            drain.awaitDrained(Duration.ofSeconds(120));
            sessionCounter.dispose();

            List<Long> recoveries = new ArrayList<>();
            for (long at : killedAt) {
                recoveries.add(drain.firstCompletionAfter(at) / 1_000_000);
            }
            Collections.sort(recoveries);
            log.info("[connections killed] {} rounds terminated {} backends; workers completed again within {} ms"
                            + " (median), {} ms (worst) of a kill; {} enqueue attempts failed (kinds {}), {}"
                            + " acknowledgements retried, {} LISTEN sessions",
                    ROUNDS, terminated, recoveries.get(recoveries.size() / 2), recoveries.get(recoveries.size() - 1),
                    drain.enqueueFailures(), drain.enqueueErrorKinds(), drain.completeRetries(), sessions.get());
            drain.close();

            ledger.assertExact(Ledger.readTable(server, prefix, queue), queue.stats().block(Duration.ofSeconds(30)),
                    Duration.ofMillis(recoveries.get(recoveries.size() - 1)));
        }
    }
}
