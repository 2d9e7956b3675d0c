package io.workqueue.faults;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactories;
import io.r2dbc.spi.ConnectionFactory;
import io.r2dbc.spi.ConnectionFactoryMetadata;
import io.r2dbc.spi.ConnectionFactoryOptions;
import io.r2dbc.spi.Option;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkerOptions;
import io.workqueue.internal.SqlStates;
import io.workqueue.migrations.WorkQueueMigrations;
import io.workqueue.testing.Poll;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Publisher;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;
import org.junit.jupiter.api.extension.ExtendWith;
import io.workqueue.testing.ExpectedLogs;

/**
 * Scenario: the server has no connection slot for the workers for a while — other sessions hold
 * every slot the workers' role may have, as every client of a promoted primary does when all of
 * them reconnect at once — and the workers' pooled connections are gone (their backends killed).
 * Every new connection is refused with SQLSTATE 53300 (too_many_connections), which the driver
 * hands up as it came from the server, with no connection error around it. Before 53300 was
 * classified as transient it ended the workers' streams. Four {@code process()} workers must back
 * off through it and, once the slots are free, carry on by themselves: keys enqueued afterwards are
 * completed, and every key is accounted for.
 *
 * <p>The slots are a role's ({@code CONNECTION LIMIT}) rather than the whole server's
 * ({@code max_connections}): the refusal and its SQLSTATE are the same, and the test's own
 * superuser sessions, and anyone else's on the cluster, still get in.
 */
@ExtendWith(ExpectedLogs.class)
class NoConnectionSlotFaultIT {
    private static final Logger log = LoggerFactory.getLogger(NoConnectionSlotFaultIT.class);
    private static final int WORKERS = 4;
    private static final int FILLERS = 2;
    /** How long, at least, every new connection is refused: several back-offs of every worker. */
    private static final Duration OUTAGE = Duration.ofSeconds(3);
    private static final String FILLER = "slot-filler";

    private FaultServer server;
    private String role;
    private ConnectionPool pool;
    private final List<Connection> fillers = new ArrayList<>();

    @AfterEach
    void cleanUp() {
        for (Connection filler : fillers) {
            Mono.from(filler.close()).onErrorResume(e -> Mono.empty()).block(Duration.ofSeconds(10));
        }
        if (pool != null) {
            pool.disposeLater().block(Duration.ofSeconds(30)); // bounded: a stuck close fails the test, not CI
        }
        if (role != null) {
            server.query("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE usename = $1", role);
            server.query("DROP OWNED BY " + role);
            server.query("DROP ROLE " + role);
        }
    }

    @Test
    void workersBackOffWhileTheServerHasNoSlotForThemAndResumeByThemselves() {
        server = FaultServer.controllable();
        String prefix = server.createTable();
        role = "wq_slots_" + prefix;
        server.query("CREATE ROLE " + role + " LOGIN");
        // Both tables, as every role a queue uses needs: claims read the queues table (a pause).
        server.query("GRANT SELECT, INSERT, UPDATE, DELETE ON " + WorkQueueMigrations.tableName(prefix) + ", "
                + io.workqueue.internal.base.TableNames.queues(prefix) + " TO " + role);
        ConnectionFactoryOptions asRole = ConnectionFactoryOptions.parse(server.url()).mutate()
                .option(ConnectionFactoryOptions.USER, role).build();
        RefusalCounter workersFactory = new RefusalCounter(ConnectionFactories.get(asRole));
        pool = FaultServer.validatingPool(workersFactory, 4);
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(pool, String.class)
                .config(WorkQueueConfig.builder("no-slot").tablePrefix(prefix).writeTimeout(Duration.ofSeconds(5)).build())
                .build();
        Ledger ledger = new Ledger("no connection slot");
        try (Drain drain = new Drain(queue, ledger)) {
            drain.preload("pre-", 5_000);
            for (int w = 0; w < WORKERS; w++) {
                drain.startProcessWorker("process-" + w, WorkerOptions.builder().concurrency(8).claimBatch(8)
                        .lease(Duration.ofSeconds(5)).poll(Duration.ofMillis(100)).build());
            }
            drain.awaitCompletedAtLeast(1_000, Duration.ofSeconds(60));

            // Other sessions take the role's slots, then the workers' connections go.
            ConnectionFactory fillerFactory = ConnectionFactories.get(asRole.mutate()
                    .option(Option.valueOf("applicationName"), FILLER).build());
            for (int i = 0; i < FILLERS; i++) {
                fillers.add(Mono.from(fillerFactory.create()).block(Duration.ofSeconds(10)));
            }
            server.query("ALTER ROLE " + role + " CONNECTION LIMIT " + FILLERS);
            long refusedBefore = workersFactory.refusals();
            long fullAt = System.nanoTime();
            long killed = server.queryLong("""
                    SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
                    WHERE usename = $1 AND application_name <> $2""", role, FILLER);
            log.info("[no connection slot] {} sessions hold the role's slots; killed the workers' {} {}", FILLERS,
                    killed, drain.progress());
            // (Workers' claims share statements, so one refusal can reach several of them.)
            Poll.until(Duration.ofSeconds(60), "the workers' new connections are refused with 53300 for " + OUTAGE
                            + " (or every worker stream ended)",
                    () -> drain.failures().size() >= WORKERS || (workersFactory.refusals() >= refusedBefore + WORKERS
                            && System.nanoTime() - fullAt >= OUTAGE.toNanos()),
                    () -> workersFactory.refusals() + " refusals " + drain.progress());

            // The slots come free: the workers connect again by themselves.
            for (Connection filler : fillers) {
                Mono.from(filler.close()).block(Duration.ofSeconds(10));
            }
            fillers.clear();
            server.query("ALTER ROLE " + role + " CONNECTION LIMIT -1");
            long freedAt = System.nanoTime();
            long refused = workersFactory.refusals() - refusedBefore;
            log.info("[no connection slot] slots free again after {} ms, {} connections refused with 53300 {}",
                    (freedAt - fullAt) / 1_000_000, refused, drain.progress());
            drain.startProducer("after-", 20, 50, Duration.ofMillis(20));

            Poll.until(Duration.ofSeconds(120), "every key completed (or every worker stream ended)",
                    () -> drain.failures().size() >= WORKERS
                            || (drain.producerDone() && ledger.completedKeys() == ledger.enqueuedKeys()),
                    drain::progress);
            List<Throwable> ended = drain.failures();
            log.info("[no connection slot] {} of {} worker streams ended{}", ended.size(), WORKERS, ended.isEmpty() ? ""
                    : ": " + ended.stream().map(Throwable::toString).collect(Collectors.joining("; ")));
            assertTrue(ended.isEmpty(), () -> ended.size() + " of " + WORKERS + " process() streams ended instead of"
                    + " backing off: " + ended);
            Duration recovery = Duration.ofNanos(drain.firstCompletionAfter(freedAt));
            drain.close();
            ledger.assertExact(Ledger.readTable(server, prefix, queue), queue.stats().block(Duration.ofSeconds(30)),
                    recovery);
        }
    }

    /** The workers' connection factory, counting the new connections the server refused with 53300. */
    static final class RefusalCounter implements ConnectionFactory {
        private final ConnectionFactory delegate;
        private final AtomicInteger refusals = new AtomicInteger();

        RefusalCounter(ConnectionFactory delegate) {
            this.delegate = delegate;
        }

        long refusals() {
            return refusals.get();
        }

        @Override
        public Publisher<? extends Connection> create() {
            return Mono.from(delegate.create()).doOnError(e -> {
                if (SqlStates.TOO_MANY_CONNECTIONS.equals(SqlStates.sqlState(e))) {
                    refusals.incrementAndGet();
                }
            });
        }

        @Override
        public ConnectionFactoryMetadata getMetadata() {
            return delegate.getMetadata();
        }
    }
}
