package io.workqueue.faults;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.spi.ConnectionFactories;
import io.r2dbc.spi.ConnectionFactoryOptions;
import io.r2dbc.spi.Option;
import io.r2dbc.spi.ValidationDepth;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkerOptions;
import io.workqueue.testing.Poll;
import java.time.Duration;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.junit.jupiter.api.extension.ExtendWith;
import io.workqueue.testing.ExpectedLogs;

/**
 * Scenario: the backends of every idle connection a pool keeps are killed
 * ({@code pg_terminate_backend}) while four {@code process()} workers drain through it, the way a
 * server restart, a failover or an idle-session timeout leaves a pool full of dead connections.
 * The pool validates as r2dbc-pool and Spring Boot do by default, by asking each connection
 * ({@code validate(depth)}) rather than by a query, and it keeps its connections open. An
 * acquisition then meets dead connections only (r2dbc-pool discards one and tries once more) and
 * fails with the pool's {@code R2dbcNonTransientResourceException: Connection validation failed},
 * which has no SQLSTATE. Before that failure was classified as transient it ended the workers'
 * streams, silently. Every stream must back off and carry on, and every key be accounted for.
 */
@ExtendWith(ExpectedLogs.class)
class DeadPooledConnectionsFaultIT {
    private static final Logger log = LoggerFactory.getLogger(DeadPooledConnectionsFaultIT.class);
    private static final int POOL_SIZE = 10;
    private static final int WORKERS = 4;
    private static final int ROUNDS = 5;

    private FaultServer server;
    private ConnectionPool pool;

    @AfterEach
    void cleanUp() {
        if (pool != null) {
            pool.disposeLater().block(Duration.ofSeconds(30)); // bounded: a stuck close fails the test, not CI
        }
        if (server != null) {
            server.ensureRunning();
        }
    }

    @ParameterizedTest
    @EnumSource(ValidationDepth.class)
    void workersRideOutAPoolWhoseIdleConnectionsAreAllDead(ValidationDepth depth) {
        server = FaultServer.controllable();
        String prefix = server.createTable();
        // The pool's sessions carry a name of their own, so that only they are killed.
        String application = "dead-pooled-" + prefix;
        pool = FaultServer.depthValidatingPool(ConnectionFactories.get(ConnectionFactoryOptions.parse(server.url())
                .mutate().option(Option.valueOf("applicationName"), application).build()), POOL_SIZE, depth);
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(pool, String.class)
                .config(WorkQueueConfig.builder("dead-pooled").tablePrefix(prefix)
                        .writeTimeout(Duration.ofSeconds(5)).build())
                .build();
        String scenario = "dead pooled connections, validated at depth " + depth;
        Ledger ledger = new Ledger(scenario);
        try (Drain drain = new Drain(queue, ledger)) {
            drain.preload("pre-", 5_000);
            for (int w = 0; w < WORKERS; w++) {
                drain.startProcessWorker("process-" + w, WorkerOptions.builder().concurrency(8).claimBatch(8)
                        .lease(Duration.ofSeconds(5)).poll(Duration.ofMillis(100)).build());
            }
            // A steady trickle, so that there is always work to claim and every worker keeps asking
            // the pool for connections.
            drain.startProducer("live-", 400, 25, Duration.ofMillis(25));
            drain.awaitCompletedAtLeast(1_000, Duration.ofSeconds(60));

            long killed = 0;
            long lastKill = 0;
            for (int round = 1; round <= ROUNDS; round++) {
                // The pool keeps its connections, and the workers use a few: most sit idle.
                Poll.until(Duration.ofSeconds(30), "the pool holds at least two idle connections",
                        () -> idleSessions(application) >= 2, drain::progress);
                long idle = terminateIdleSessions(application);
                lastKill = System.nanoTime();
                killed += idle;
                long at = lastKill;
                Poll.until(Duration.ofSeconds(60), "a key is completed after kill " + round,
                        () -> drain.firstCompletionAfter(at) >= 0 || !drain.failures().isEmpty(), drain::progress);
                log.info("[{}] round {}: killed {} idle pooled sessions {}", scenario, round, idle, drain.progress());
            }
            // Not two a round: a session counted idle may have started a statement before the kill.
            assertTrue(killed >= ROUNDS, "the rounds found idle pooled sessions to kill: " + killed);

            Poll.until(Duration.ofSeconds(120), "every key completed (or every worker stream ended)",
                    () -> drain.failures().size() >= WORKERS
                            || (drain.producerDone() && ledger.completedKeys() == ledger.enqueuedKeys()),
                    drain::progress);
            List<Throwable> ended = drain.failures();
            log.info("[{}] {} sessions killed in {} rounds; {} of {} worker streams ended{}", scenario, killed, ROUNDS,
                    ended.size(), WORKERS, ended.isEmpty() ? ""
                            : ": " + ended.stream().map(Throwable::toString).collect(Collectors.joining("; ")));
            assertTrue(ended.isEmpty(), () -> ended.size() + " of " + WORKERS + " process() streams ended instead"
                    + " of backing off: " + ended);
            Duration recovery = Duration.ofNanos(drain.firstCompletionAfter(lastKill));
            drain.close();
            ledger.assertExact(Ledger.readTable(server, prefix, queue), queue.stats().block(Duration.ofSeconds(30)),
                    recovery);
        }
    }

    private long idleSessions(String application) {
        return server.queryLong("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND state = 'idle'",
                application);
    }

    /** Kills the pool's sessions that are between statements; those running one are left alone. */
    private long terminateIdleSessions(String application) {
        return server.queryLong("""
                SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))
                FROM pg_stat_activity
                WHERE application_name = $1 AND state = 'idle'""", application);
    }
}
