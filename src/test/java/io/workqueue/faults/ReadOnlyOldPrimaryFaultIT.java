package io.workqueue.faults;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactory;
import io.r2dbc.spi.ConnectionFactoryMetadata;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkerOptions;
import io.workqueue.internal.SqlStates;
import io.workqueue.testing.Poll;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Publisher;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;
import org.junit.jupiter.api.extension.ExtendWith;
import io.workqueue.testing.ExpectedLogs;

/**
 * Scenario: after a failover the old primary comes back — as a hot standby, read-only — while the
 * queue still reaches it: its address (a DNS name or a virtual IP, {@link MovingAddress} here)
 * still names the old node. Every write the queue sends there (a claim, a completion, an enqueue)
 * is refused with SQLSTATE 25006. Then the address moves to the new primary.
 *
 * <p>What must hold: no worker stream ends ({@code claimStream} and {@code process()} back off as
 * for a lost connection), the producer's enqueues fail rather than hang, the pool does not keep
 * handing out connections to the read-only node once the address has moved (each refused
 * connection is closed, not returned), and once the address names the primary the queue carries
 * on there by itself. With synchronous replication nothing acknowledged is lost, and every key is
 * accounted for.
 *
 * <p>Through r2dbc-postgresql's multi-host URL with {@code targetServerType=primary} the old node
 * is never reached at all: the driver asks each new connection's server whether it is read-only.
 * The scenario checks that too.
 */
@ExtendWith(ExpectedLogs.class)
class ReadOnlyOldPrimaryFaultIT {
    private static final Logger log = LoggerFactory.getLogger(ReadOnlyOldPrimaryFaultIT.class);
    private static final int PRELOADED = 6_000;
    private static final int POOL_SIZE = 8;

    private HaPair pair;
    private ConnectionPool pool;

    @AfterEach
    void tearDown() {
        if (pool != null) {
            pool.disposeLater().block(Duration.ofSeconds(30));
        }
        if (pair != null) {
            pair.close();
        }
    }

    /**
     * Where new connections go: to whichever node the address names when they are made. What a DNS
     * name or a virtual IP does for a client; connections already made stay where they are.
     */
    static final class MovingAddress implements ConnectionFactory {
        private final AtomicReference<ConnectionFactory> target;

        MovingAddress(ConnectionFactory first) {
            this.target = new AtomicReference<>(first);
        }

        void moveTo(ConnectionFactory next) {
            target.set(next);
        }

        @Override
        public Publisher<? extends Connection> create() {
            return Mono.defer(() -> Mono.from(target.get().create()));
        }

        @Override
        public ConnectionFactoryMetadata getMetadata() {
            return target.get().getMetadata();
        }
    }

    @Test
    void writesRefusedByTheOldPrimaryBackAsAStandbyEndNoStreamAndTheQueueCarriesOnOnTheNewPrimary() {
        pair = HaPair.create(true);
        FaultServer oldPrimary = FaultServer.at(pair.oldPrimaryUrl());
        FaultServer newPrimary = FaultServer.at(pair.standbyUrl());
        String prefix = oldPrimary.createTable();
        MovingAddress address = new MovingAddress(oldPrimary.plain());
        pool = FaultServer.validatingPool(address, POOL_SIZE);
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(pool, String.class)
                .config(WorkQueueConfig.builder("read-only").tablePrefix(prefix).writeTimeout(Duration.ofSeconds(5))
                        .build())
                .build();
        Ledger ledger = new Ledger("old primary back read-only");

        try (Drain drain = new Drain(queue, ledger)) {
            drain.preload("pre-", PRELOADED);
            drain.startWorkers(2, Duration.ofSeconds(5), Duration.ofMillis(200));
            drain.startProcessWorker("process-0", WorkerOptions.builder().concurrency(8).claimBatch(8)
                    .lease(Duration.ofSeconds(5)).poll(Duration.ofMillis(200)).build());
            drain.startProducer("live-", 200, 20, Duration.ofMillis(50));
            drain.awaitCompletedAtLeast(PRELOADED / 4, Duration.ofSeconds(60));

            pair.killPrimary();
            pair.promoteStandby();
            pair.restartOldPrimaryAsStandby();
            // As in the asynchronous failover: SIGKILL takes the postmaster only, so what its
            // backends acknowledged while dying counts as acknowledged before the promotion.
            Set<String> enqueuedBefore = ledger.enqueuedSoFar();
            Set<String> completedBefore = ledger.completedSoFar();
            Ledger.assertSurvived("failover", enqueuedBefore, completedBefore,
                    Ledger.readTable(newPrimary, prefix, queue));

            // The address still names the old node, which answers but refuses every write.
            int failuresBefore = drain.enqueueFailures();
            long readOnlySince = System.nanoTime();
            Throwable refused = assertThrows(RuntimeException.class,
                    () -> queue.claim(1, Duration.ofSeconds(5)).block(Duration.ofSeconds(30)));
            assertEquals(SqlStates.READ_ONLY_SQL_TRANSACTION, SqlStates.sqlState(refused), refused::toString);
            Poll.until(Duration.ofSeconds(60), "the producer's enqueues are refused by the read-only node, for 2 s",
                    () -> drain.enqueueErrorKinds().stream().anyMatch(kind -> kind.contains("[25006]"))
                            && System.nanoTime() - readOnlySince >= Duration.ofSeconds(2).toNanos(),
                    () -> drain.progress() + "; enqueue errors " + drain.enqueueErrorKinds());
            drain.assertNoWorkerFailed();
            long sessionsOnOldNode = queueSessions(oldPrimary);
            int refusedEnqueues = drain.enqueueFailures() - failuresBefore;

            address.moveTo(newPrimary.plain());
            long movedAt = System.nanoTime();
            log.info("[old primary back read-only] the address moved to the new primary; the pool held {} connections"
                    + " to the read-only node, {} enqueue attempts were refused {}", sessionsOnOldNode, refusedEnqueues,
                    drain.progress());
            Poll.until(Duration.ofSeconds(30), "a worker completes a key on the new primary",
                    () -> drain.firstCompletionAfter(movedAt) >= 0, drain::progress);
            Poll.until(Duration.ofSeconds(30), "the producer commits a batch on the new primary",
                    () -> drain.producerDone() || drain.firstEnqueueAfter(movedAt) >= 0, drain::progress);
            drain.awaitDrained(Duration.ofSeconds(120));
            Duration workerRecovery = Duration.ofNanos(drain.firstCompletionAfter(movedAt));
            long producerAfter = drain.firstEnqueueAfter(movedAt);
            int refusedAfterMove = drain.enqueueFailures() - failuresBefore - refusedEnqueues;
            // Each connection the pool held to the read-only node is refused once more at most, then
            // closed: handed back, it would be handed out again for as long as it lived.
            assertTrue(refusedAfterMove <= POOL_SIZE, () -> refusedAfterMove + " enqueue attempts were refused"
                    + " after the address moved, more than the pool's " + POOL_SIZE + " connections");
            Poll.until(Duration.ofSeconds(30), "no pooled connection is left on the read-only node",
                    () -> queueSessions(oldPrimary) == 0);

            // Through the multi-host URL, the read-only node (listed first) is never chosen.
            assertEquals("5437", FaultServer.at(pair.failoverUrl()).query("SHOW port").get(0),
                    "targetServerType=primary skips the read-only old primary");

            drain.close();
            log.info("[old primary back read-only] after the address moved: workers completed again within {} ms,"
                            + " the producer committed again within {}; {} enqueue attempts were refused after the"
                            + " move; {} enqueue attempts failed in all ({}), {} acknowledgements were retried",
                    workerRecovery.toMillis(), producerAfter < 0 ? "n/a (it had finished)" : producerAfter / 1_000_000 + " ms",
                    refusedAfterMove, drain.enqueueFailures(), drain.enqueueErrorKinds(), drain.completeRetries());
            Ledger.Summary summary = ledger.assertExact(Ledger.readTable(newPrimary, prefix, queue),
                    queue.stats().block(Duration.ofSeconds(30)), workerRecovery);
            assertEquals(0, summary.lost());
        }
    }

    /** Client sessions on {@code server} other than the one asking: the queue's pooled connections. */
    private static long queueSessions(FaultServer server) {
        return server.queryLong("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'"
                + " AND pid <> pg_backend_pid()");
    }
}
