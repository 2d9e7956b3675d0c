package io.workqueue.faults;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.r2dbc.pool.ConnectionPool;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.migrations.WorkQueueMigrations;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.junit.jupiter.api.extension.ExtendWith;
import io.workqueue.testing.ExpectedLogs;

/**
 * Scenario 3: a worker in another JVM leases items and is killed with SIGKILL while holding them.
 * Nothing tells the queue: the leases simply lapse, and a surviving worker takes the items over,
 * flagged {@code reclaimed} with attempts incremented. Every key is accounted for.
 */
@ExtendWith(ExpectedLogs.class)
class WorkerCrashFaultIT {
    private static final Logger log = LoggerFactory.getLogger(WorkerCrashFaultIT.class);
    private static final int KEYS = 2_000;
    private static final int HELD_BY_THE_VICTIM = 200;
    private static final Duration VICTIM_LEASE = Duration.ofSeconds(3);

    private Process victim;
    private ConnectionPool pool;

    @AfterEach
    void cleanUp() {
        if (victim != null) {
            victim.destroyForcibly();
        }
        if (pool != null) {
            pool.disposeLater().block(Duration.ofSeconds(30)); // bounded: a stuck close fails the test, not CI
        }
    }

    @Test
    void leasesOfAKilledWorkerProcessLapseAndAreReclaimedFlagged() throws Exception {
        FaultServer server = FaultServer.any();
        String prefix = server.createTable();
        pool = server.pool(4);
        String name = "crash";
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(pool, String.class)
                .config(WorkQueueConfig.builder(name).tablePrefix(prefix).build())
                .build();
        Ledger ledger = new Ledger("worker crash");

        try (Drain drain = new Drain(queue, ledger)) {
            drain.preload("k-", KEYS);

            Path victimLog = Files.createTempFile("crashing-worker", ".log");
            victim = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-XX:TieredStopAtLevel=1", "-Xmx256m",
                    "-cp", System.getProperty("java.class.path"),
                    CrashingWorker.class.getName(),
                    server.url(), prefix, name, String.valueOf(HELD_BY_THE_VICTIM), VICTIM_LEASE.toString())
                    .redirectError(victimLog.toFile())
                    .start();
            List<String> held = readClaims(victim, ledger, victimLog);
            assertEquals(HELD_BY_THE_VICTIM, held.size(), "the victim reports what it leased");
            assertEquals(HELD_BY_THE_VICTIM, server.queryLong(
                    "SELECT count(*) FROM " + WorkQueueMigrations.tableName(prefix)
                            + " WHERE queue_name = $1 AND lease_until > now() AND completed_at IS NULL", name),
                    "the victim holds live leases when it dies");

            // The survivor starts before the kill: it drains everything else at once, and can take
            // the victim's items only when their leases lapse.
            drain.startWorkers(1, Duration.ofSeconds(30), Duration.ofMillis(100));
            long killedAt = System.nanoTime();
            victim.destroyForcibly(); // SIGKILL: no shutdown hook, no release, no goodbye
            assertTrue(victim.waitFor(30, TimeUnit.SECONDS), "the victim died");
            log.info("[worker crash] killed the worker process (exit {}) holding {} leases",
                    victim.exitValue(), held.size());

            drain.awaitDrained(Duration.ofSeconds(60));
            long lastReclaim = 0;
            for (String key : held) {
                List<Ledger.Claim> claims = ledger.claimsOf(key);
                assertEquals(2, claims.size(), () -> key + " was claimed by the victim, then once more: " + claims);
                Ledger.Claim survivor = claims.get(1);
                assertEquals("worker-0", survivor.worker());
                assertEquals(2, survivor.attempts(), key + ": attempts count the victim's claim");
                assertTrue(survivor.reclaimed(), key + ": taking over a lapsed lease is flagged");
                lastReclaim = Math.max(lastReclaim, survivor.atNanos());
            }
            for (String key : Drain.keys("k-", 0, KEYS)) {
                if (!held.contains(key)) {
                    assertFalse(ledger.claimsOf(key).get(0).reclaimed(), key);
                }
            }
            Duration recovery = Duration.ofNanos(lastReclaim - killedAt);
            log.info("[worker crash] the survivor reclaimed all {} of the victim's keys {} ms after the kill (lease {})",
                    held.size(), recovery.toMillis(), VICTIM_LEASE);
            drain.close();
            ledger.assertExact(Ledger.readTable(server, prefix, queue), queue.stats().block(Duration.ofSeconds(30)),
                    recovery);
        }
    }

    /** Reads the victim's claims until it says it is holding them; records them in the ledger. */
    private static List<String> readClaims(Process victim, Ledger ledger, Path victimLog) throws Exception {
        CompletableFuture<List<String>> claims = CompletableFuture.supplyAsync(() -> {
            List<String> keys = new ArrayList<>();
            try (BufferedReader out = new BufferedReader(
                    new InputStreamReader(victim.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line = out.readLine(); line != null; line = out.readLine()) {
                    if (line.equals("HOLDING")) {
                        return keys;
                    }
                    if (line.startsWith("CLAIMED ")) {
                        String[] parts = line.split(" ", 4);
                        ledger.claimed(Item.of(parts[3], 0, Integer.parseInt(parts[1]),
                                Boolean.parseBoolean(parts[2])), "victim");
                        keys.add(parts[3]);
                    }
                }
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
            throw new IllegalStateException("the victim exited before holding its leases");
        });
        try {
            return claims.get(60, TimeUnit.SECONDS);
        } catch (TimeoutException | java.util.concurrent.ExecutionException e) {
            fail("the victim did not report its leases: " + e + "; its log:\n" + Files.readString(victimLog));
            throw e;
        }
    }
}
