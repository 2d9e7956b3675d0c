package io.workqueue.faults;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.r2dbc.pool.ConnectionPool;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.migrations.WorkQueueMigrations;
import io.workqueue.testing.Poll;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.junit.jupiter.api.extension.ExtendWith;
import io.workqueue.testing.ExpectedLogs;

/**
 * Scenario: three worker processes, each on a host of its own (a network namespace with its own
 * address and TCP settings, see {@link HostNetwork}), drain one queue on a database host while a
 * producer on the database host keeps enqueueing. One host's link is cut while it holds leases —
 * silently: its frames are dropped, its connections go half-open, nobody is told. The link comes
 * back only after the other hosts have taken over every item it held and the database has ended
 * its sessions. Nobody restarts anything.
 *
 * <p>What must hold: the other hosts reclaim the cut host's items ({@code reclaimed}, attempts
 * above 1) once the leases lapse; the cut host's worker stream never ends, notices the dead link
 * within its lease (the claim loop abandons a round with no answer), and claims again by itself
 * once the link is back; its listener's idle connection is found dead by TCP keepalive and listens
 * again after the link returns; its late acknowledgements of items others have since completed
 * change nothing; and every key is accounted for, exactly.
 */
@ExtendWith(ExpectedLogs.class)
class WorkerHostCutOffFaultIT {
    private static final Logger log = LoggerFactory.getLogger(WorkerHostCutOffFaultIT.class);
    private static final int HOSTS = 3;
    private static final int CUT = 1;
    private static final int PRELOADED = 2_000;
    private static final int CONCURRENCY = 4;
    private static final Duration LEASE = Duration.ofSeconds(5);
    /** How long a lost link may go unnoticed, at most: a round is abandoned after the lease. */
    private static final Duration DETECTION_BOUND = LEASE.multipliedBy(2);

    private HostNetwork network;
    private ConnectionPool pool;
    private final List<Host> hosts = new ArrayList<>();

    @AfterEach
    void tearDown() {
        for (Host host : hosts) {
            host.process.destroyForcibly();
        }
        if (pool != null) {
            pool.disposeLater().block(Duration.ofSeconds(30));
        }
        if (network != null) {
            network.close();
        }
    }

    @Test
    void aWorkerHostCutOffWhileHoldingLeasesLosesNothingAndComesBackByItself() throws Exception {
        network = HostNetwork.create(HOSTS);
        FaultServer database = network.local();
        String prefix = database.createTable();
        String name = "cut-off";
        String channel = prefix + "_wake";
        pool = database.pool(4);
        ReactiveWorkQueue<String> producer = ReactiveWorkQueue.builder(pool, String.class)
                .config(WorkQueueConfig.builder(name).tablePrefix(prefix).notifyChannel(channel).build())
                .build();
        Ledger ledger = new Ledger("worker host cut off");

        try (Drain drain = new Drain(producer, ledger)) {
            drain.preload("pre-", PRELOADED);
            for (int h = 1; h <= HOSTS; h++) {
                hosts.add(Host.start(network, h, prefix, name, channel, ledger));
            }
            for (Host host : hosts) {
                Poll.until(Duration.ofSeconds(60), "host " + host.number + " is ready and listening",
                        () -> (host.ready && host.listening.size() > 0) || host.ended(), host::describe);
            }
            drain.startProducer("live-", 150, 20, Duration.ofMillis(100));
            Host cut = hosts.get(CUT - 1);
            Poll.until(Duration.ofSeconds(60), "a fifth of the preload is completed, some of it by host " + CUT,
                    () -> ledger.completedKeys() >= PRELOADED / 5 && !cut.completedAt.isEmpty(), this::progress);
            // Cut while a handler runs: its item cannot have been acknowledged before the cut.
            Poll.until(Duration.ofSeconds(30), "host " + CUT + " runs a handler", () -> !cut.running().isEmpty());

            List<String> sessionsBefore = sessionsOf(database, CUT);
            long cutAt = System.nanoTime();
            network.cut(CUT);
            Set<String> held = cut.holding();
            log.info("[worker host cut off] cut host {} holding {} leases, with {} sessions on the database;{}",
                    CUT, held.size(), sessionsBefore.size(), progress());

            // The others take over every item the cut host held, once its leases lapse. (An item
            // whose acknowledgement reached the database just before the cut is completed instead.)
            Poll.until(Duration.ofSeconds(60), "the other hosts reclaim everything host " + CUT + " held",
                    () -> held.stream().allMatch(key -> reclaimedByAnother(ledger, key, cut.name())
                            || completedInTable(database, prefix, name, key)),
                    () -> progress() + "; the rows of what host " + CUT + " held: " + database.query(
                            "SELECT item_key || ' attempts ' || attempts || ' lease ends in ' || (lease_until - now())"
                                    + " || ' completed ' || (completed_at IS NOT NULL) FROM "
                                    + WorkQueueMigrations.tableName(prefix) + " WHERE queue_name = $1 AND item_key = ANY($2)",
                            name, held.toArray(String[]::new)));
            long reclaimedAt = System.nanoTime();
            Poll.until(Duration.ofSeconds(60), "the database ends the cut host's sessions",
                    () -> sessionsOf(database, CUT).stream().noneMatch(sessionsBefore::contains));
            long serverDroppedAt = System.nanoTime();
            Poll.until(Duration.ofSeconds(60), "host " + CUT + "'s listener finds its connection dead",
                    () -> cut.firstAfter(cut.listenerLost, cutAt) >= 0, cut::describe);
            long detectedAt = cut.firstAfter(cut.roundFailures, cutAt);
            long listenerLostAt = cut.firstAfter(cut.listenerLost, cutAt);
            network.restore(CUT);
            long restoredAt = System.nanoTime();

            Poll.until(Duration.ofSeconds(60), "host " + CUT + " claims again after its link is back",
                    () -> cut.firstAfter(cut.claimTimes, restoredAt) >= 0 || cut.ended(), cut::describe);
            Poll.until(Duration.ofSeconds(60), "host " + CUT + "'s listener listens again",
                    () -> cut.firstAfter(cut.listening, restoredAt) >= 0 || cut.ended(), cut::describe);
            drain.awaitDrained(Duration.ofSeconds(120));
            for (Host host : hosts) {
                assertFalse(host.ended(), () -> "host " + host.number + "'s worker stopped: " + host.describe());
            }
            long lateAcknowledgements = held.stream()
                    .filter(key -> cut.completedAt.containsKey(key) && reclaimedByAnother(ledger, key, cut.name()))
                    .count();
            Duration resumed = Duration.ofNanos(cut.firstAfter(cut.claimTimes, restoredAt) - restoredAt);
            Duration listenerBack = Duration.ofNanos(cut.firstAfter(cut.listening, restoredAt) - restoredAt);
            drain.close();
            for (Host host : hosts) {
                log.info("[worker host cut off] host {}: {}", host.number, host.describe());
            }
            Ledger.Summary summary = ledger.assertExact(Ledger.readTable(database, prefix, producer),
                    producer.stats().block(Duration.ofSeconds(30)), resumed);
            long reclaims = held.stream().filter(key -> reclaimedByAnother(ledger, key, cut.name())).count();
            log.info("""
                    [worker host cut off] accounting (lease {}, host keepalive {}, server {}):
                      keys enqueued (acknowledged to the producer)   {}
                      keys completed (acknowledged to a worker)      {}
                      claims / duplicated (reclaims after a lapse)   {} / {}
                      lost                                           {}
                      leases host {} held when cut / reclaimed by others / late acknowledgements from it   {} / {} / {}
                      after the cut: host {}'s worker noticed          {} ms
                      after the cut: its listener's connection found dead {} ms
                      after the cut: the others had reclaimed its items  {} ms
                      after the cut: the database ended its {} sessions   {} ms
                      after the link came back: host {} claimed again    {} ms
                      after the link came back: its listener listened    {} ms""",
                    LEASE, HostNetwork.HOST_SYSCTLS, HostNetwork.SERVER_SETTINGS,
                    summary.enqueued(), summary.completed(), summary.claims(), summary.duplicates(), summary.lost(),
                    CUT, held.size(), reclaims, lateAcknowledgements,
                    CUT, millisBetween(cutAt, detectedAt), millisBetween(cutAt, listenerLostAt),
                    millisBetween(cutAt, reclaimedAt), sessionsBefore.size(), millisBetween(cutAt, serverDroppedAt),
                    CUT, resumed.toMillis(), listenerBack.toMillis());

            assertEquals(0, summary.lost());
            assertTrue(reclaims > 0, "the others reclaimed some of the cut host's items");
            assertTrue(detectedAt >= 0 && detectedAt - cutAt <= DETECTION_BOUND.toNanos(),
                    () -> "host " + CUT + " noticed its dead link within " + DETECTION_BOUND + ": "
                            + millisBetween(cutAt, detectedAt) + " ms");
        }
    }

    private static long millisBetween(long from, long to) {
        return to < 0 ? -1 : (to - from) / 1_000_000;
    }

    /** The database's sessions from host {@code host}'s address. */
    private static List<String> sessionsOf(FaultServer database, int host) {
        return database.query("SELECT pid FROM pg_stat_activity WHERE client_addr = $1::inet", HostNetwork.address(host));
    }

    private static boolean reclaimedByAnother(Ledger ledger, String key, String host) {
        return ledger.claimsOf(key).stream().anyMatch(c -> !c.worker().equals(host) && c.reclaimed() && c.attempts() > 1);
    }

    private static boolean completedInTable(FaultServer database, String prefix, String queue, String key) {
        return !database.query("SELECT 1 FROM " + WorkQueueMigrations.tableName(prefix)
                + " WHERE queue_name = $1 AND item_key = $2 AND completed_at IS NOT NULL", queue, key).isEmpty();
    }

    private String progress() {
        StringBuilder text = new StringBuilder();
        for (Host host : hosts) {
            text.append(" host ").append(host.number).append(": ").append(host.describe()).append(';');
        }
        return text.toString();
    }

    /** One worker host's process, as the test sees it through its reports and its log. */
    private static final class Host {
        final int number;
        final Process process;
        final Ledger ledger;
        final Map<String, Long> claimedAt = new ConcurrentHashMap<>();
        final Map<String, Long> ranAt = new ConcurrentHashMap<>();
        final Map<String, Long> completedAt = new ConcurrentHashMap<>();
        final Queue<Long> claimTimes = new ConcurrentLinkedQueue<>();
        /** When its claim loop logged a failed round. */
        final Queue<Long> roundFailures = new ConcurrentLinkedQueue<>();
        /** When its listener logged a lost connection, and a LISTEN session (re)established. */
        final Queue<Long> listenerLost = new ConcurrentLinkedQueue<>();
        final Queue<Long> listening = new ConcurrentLinkedQueue<>();
        final Queue<String> stopped = new ConcurrentLinkedQueue<>();
        volatile boolean ready;
        volatile boolean exited;

        private Host(int number, Process process, Ledger ledger) {
            this.number = number;
            this.process = process;
            this.ledger = ledger;
        }

        static Host start(HostNetwork network, int number, String prefix, String queue, String channel, Ledger ledger)
                throws IOException {
            List<String> java = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-XX:TieredStopAtLevel=1", "-Xmx256m", "-XX:+AllowRedefinitionToAddDeleteMethods",
                    "-Dworkqueue.log.notify=debug",
                    "-cp", System.getProperty("java.class.path"),
                    HostWorker.class.getName(),
                    network.hostUrl(), prefix, queue, String.valueOf(CONCURRENCY), LEASE.toString(), channel);
            Process process = new ProcessBuilder(network.command(number, java)).start();
            Host host = new Host(number, process, ledger);
            host.read(process.getInputStream(), host::report, "host-" + number + "-out");
            host.read(process.getErrorStream(), host::logged, "host-" + number + "-log");
            return host;
        }

        String name() {
            return "host-" + number;
        }

        private void report(String line) {
            long now = System.nanoTime();
            if (line.equals("READY")) {
                ready = true;
            } else if (line.startsWith("CLAIMED ")) {
                String[] parts = line.split(" ", 4);
                ledger.claimed(Item.of(parts[3], 0, Integer.parseInt(parts[1]), Boolean.parseBoolean(parts[2])),
                        name());
                claimedAt.put(parts[3], now);
                claimTimes.add(now);
            } else if (line.startsWith("RAN ")) {
                ranAt.put(line.substring("RAN ".length()), now);
            } else if (line.startsWith("COMPLETED ")) {
                String key = line.substring("COMPLETED ".length());
                completedAt.put(key, now);
                ledger.completed(List.of(key));
            } else if (line.startsWith("STOPPED ")) {
                stopped.add(line);
                log.error("[{}] {}", name(), line);
            } else {
                log.info("[{}] {}", name(), line);
            }
        }

        /** The child's log: relayed, with the claim loop's and the listener's events timed. */
        private void logged(String line) {
            long now = System.nanoTime();
            if (line.contains("claim loop on queue") && line.contains("failed")) {
                roundFailures.add(now);
            } else if (line.contains("lost its connection")) {
                listenerLost.add(now);
            } else if (line.contains("LISTEN") && (line.contains("established") || line.contains("re-established"))) {
                listening.add(now);
            }
            if (line.contains("LISTEN") || line.contains("WARN") || line.contains("ERROR") || line.contains("Exception")) {
                log.info("[{} log] {}", name(), line);
            }
        }

        private void read(InputStream stream, Consumer<String> each, String thread) {
            Thread reader = new Thread(() -> {
                try (BufferedReader lines = new BufferedReader(new InputStreamReader(stream, StandardCharsets.UTF_8))) {
                    for (String line = lines.readLine(); line != null; line = lines.readLine()) {
                        each.accept(line);
                    }
                } catch (IOException e) {
                    log.debug("[{}] stopped reading", name(), e);
                }
                exited = true;
            }, thread);
            reader.setDaemon(true);
            reader.start();
        }

        /** Keys this host has claimed and not yet reported completed: the leases it holds, as far as it knows. */
        Set<String> holding() {
            Set<String> held = new HashSet<>(claimedAt.keySet());
            held.removeAll(completedAt.keySet());
            return Set.copyOf(held);
        }

        /** Keys whose handler has started on this host and not finished. */
        Set<String> running() {
            Set<String> running = new HashSet<>(claimedAt.keySet());
            running.removeAll(ranAt.keySet());
            return running;
        }

        boolean ended() {
            return !stopped.isEmpty() || exited || !process.isAlive();
        }

        /** The first of {@code times} after {@code since}, or -1. */
        long firstAfter(Queue<Long> times, long since) {
            long first = Long.MAX_VALUE;
            for (long t : times) {
                if (t > since && t < first) {
                    first = t;
                }
            }
            return first == Long.MAX_VALUE ? -1 : first;
        }

        String describe() {
            return "claimed " + claimTimes.size() + ", completed " + completedAt.size() + ", holding " + holding().size()
                    + ", failed rounds " + roundFailures.size() + ", listener lost " + listenerLost.size()
                    + " / established " + listening.size() + (ended() ? ", ENDED " + stopped : "");
        }
    }
}
