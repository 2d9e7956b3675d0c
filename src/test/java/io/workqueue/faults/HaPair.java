package io.workqueue.faults;

import io.workqueue.testing.Skips;
import static org.junit.jupiter.api.Assertions.fail;

import io.workqueue.testing.Poll;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A primary and a streaming standby made for one test, from PostgreSQL's own tools: two clusters
 * ({@code pg_createcluster}, trust auth) on ports of their own, the standby cloned with
 * {@code pg_basebackup}, replication synchronous or not. The test can SIGKILL the primary's
 * postmaster and promote the standby. Needs root and Debian's postgresql-common; without them the
 * scenario is skipped with a message, unless {@value #REQUIRED_VARIABLE} is {@code true} (CI).
 * Both clusters are dropped on {@link #close()} and before being made, so a run left half-done by
 * an earlier one is cleaned up first.
 */
final class HaPair implements AutoCloseable {
    static final String REQUIRED_VARIABLE = "WORKQUEUE_HA_REQUIRED";
    private static final Logger log = LoggerFactory.getLogger(HaPair.class);
    private static final String PRIMARY = "wqha1";
    private static final String STANDBY = "wqha2";
    private static final int PRIMARY_PORT = 5436;
    private static final int STANDBY_PORT = 5437;

    private final String version;

    private HaPair(String version) {
        this.version = version;
    }

    /** Makes the pair and waits until the standby streams (and, if {@code synchronous}, is the sync standby). */
    static HaPair create(boolean synchronous) {
        String why = null;
        if (!"true".equalsIgnoreCase(System.getenv(REQUIRED_VARIABLE))) {
            // It makes and drops PostgreSQL clusters on this machine: only when asked.
            Skips.abort("the HA scenario makes its own primary and standby clusters on this machine (ports "
                    + PRIMARY_PORT + " and " + STANDBY_PORT + "); set " + REQUIRED_VARIABLE + "=true to run it (CI does)");
        }
        if (!"root".equals(System.getProperty("user.name"))) {
            why = "the HA scenario needs root to make clusters (running as " + System.getProperty("user.name") + ")";
        } else if (!Files.isDirectory(Path.of("/etc/postgresql"))) {
            why = "the HA scenario needs Debian's postgresql-common (/etc/postgresql is missing)";
        }
        if (why != null) {
            if ("true".equalsIgnoreCase(System.getenv(REQUIRED_VARIABLE))) {
                fail(REQUIRED_VARIABLE + "=true but " + why);
            }
            Skips.abort(why);
        }
        String version;
        try (var versions = Files.list(Path.of("/etc/postgresql"))) {
            version = versions.map(p -> p.getFileName().toString()).sorted().findFirst().orElseThrow();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        HaPair pair = new HaPair(version);
        pair.drop();
        run("pg_createcluster", version, PRIMARY, "-p", String.valueOf(PRIMARY_PORT), "--", "--auth=trust");
        if (synchronous) {
            append(Path.of("/etc/postgresql", version, PRIMARY, "postgresql.conf"),
                    "synchronous_standby_names = '" + STANDBY + "'\n");
        }
        run("pg_ctlcluster", "--skip-systemctl-redirect", version, PRIMARY, "start");
        run("pg_createcluster", version, STANDBY, "-p", String.valueOf(STANDBY_PORT), "--", "--auth=trust");
        Path standbyData = Path.of("/var/lib/postgresql", version, STANDBY);
        run("rm", "-rf", standbyData.toString());
        run("install", "-d", "-o", "postgres", "-g", "postgres", "-m", "700", standbyData.toString());
        run("runuser", "-u", "postgres", "--", "pg_basebackup", "-h", "127.0.0.1", "-p", String.valueOf(PRIMARY_PORT),
                "-U", "postgres", "-D", standbyData.toString(), "-R", "-X", "stream");
        // The name synchronous_standby_names refers to.
        append(standbyData.resolve("postgresql.auto.conf"), "primary_conninfo = 'host=127.0.0.1 port="
                + PRIMARY_PORT + " user=postgres application_name=" + STANDBY + "'\n");
        run("chown", "postgres:postgres", standbyData.resolve("postgresql.auto.conf").toString());
        run("pg_ctlcluster", "--skip-systemctl-redirect", version, STANDBY, "start");
        String wanted = synchronous ? "streaming sync" : "streaming async";
        Poll.until(Duration.ofSeconds(60), "the standby " + wanted, () -> wanted.equals(psql(PRIMARY_PORT,
                "SELECT state || ' ' || sync_state FROM pg_stat_replication WHERE application_name = '" + STANDBY + "'")));
        log.info("HA pair up: primary {} on {}, standby {} on {} ({})", PRIMARY, PRIMARY_PORT, STANDBY, STANDBY_PORT, wanted);
        return pair;
    }

    /** Both nodes; a client picks the primary ({@code targetServerType=primary}). */
    String failoverUrl() {
        return "r2dbc:postgresql:failover://postgres@127.0.0.1:" + PRIMARY_PORT + ",127.0.0.1:" + STANDBY_PORT
                + "/postgres?targetServerType=primary";
    }

    /** The standby's own URL, for reading what survived. */
    String standbyUrl() {
        return "r2dbc:postgresql://postgres@127.0.0.1:" + STANDBY_PORT + "/postgres";
    }

    /** SIGKILLs the primary's postmaster: no shutdown, no goodbye to the standby or the clients. */
    void killPrimary() {
        try {
            String pid = Files.readAllLines(Path.of("/var/lib/postgresql", version, PRIMARY, "postmaster.pid")).get(0).trim();
            run("kill", "-9", pid);
            log.info("SIGKILLed the primary's postmaster (pid {})", pid);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Promotes the standby and waits until it accepts writes. */
    void promoteStandby() {
        run("pg_ctlcluster", "--skip-systemctl-redirect", version, STANDBY, "promote");
        Poll.until(Duration.ofSeconds(60), "the standby promoted", () -> "f".equals(psql(STANDBY_PORT,
                "SELECT pg_is_in_recovery()")));
    }

    /**
     * Brings the killed primary back as what a careless restart makes of it: a hot standby of the
     * new primary ({@code standby.signal}), read-only, accepting connections on its old port. (It
     * runs crash recovery first; whether it can then follow the new timeline does not matter here,
     * only that it answers, and refuses writes with SQLSTATE 25006.) Waits until it accepts
     * connections in recovery.
     */
    void restartOldPrimaryAsStandby() {
        Path data = Path.of("/var/lib/postgresql", version, PRIMARY);
        append(data.resolve("postgresql.auto.conf"), "primary_conninfo = 'host=127.0.0.1 port=" + STANDBY_PORT
                + " user=postgres application_name=" + PRIMARY + "'\n");
        run("touch", data.resolve("standby.signal").toString());
        run("chown", "postgres:postgres", data.resolve("standby.signal").toString(),
                data.resolve("postgresql.auto.conf").toString());
        // The killed postmaster's backends notice its death and exit on their own; until the last
        // one has, the new postmaster refuses to start on their shared memory.
        Poll.until(Duration.ofSeconds(60), "the old primary starts again", () -> {
            try {
                run("pg_ctlcluster", "--skip-systemctl-redirect", version, PRIMARY, "start");
                return true;
            } catch (AssertionError e) {
                log.info("the old primary did not start yet: {}", e.getMessage());
                return false;
            }
        });
        Poll.until(Duration.ofSeconds(60), "the old primary answers, read-only", () -> "t".equals(psql(PRIMARY_PORT,
                "SELECT pg_is_in_recovery()")));
        log.info("the old primary is back on {} as a read-only standby", PRIMARY_PORT);
    }

    /** The old primary's own URL, whatever it is now. */
    String oldPrimaryUrl() {
        return "r2dbc:postgresql://postgres@127.0.0.1:" + PRIMARY_PORT + "/postgres";
    }

    @Override
    public void close() {
        drop();
    }

    private void drop() {
        for (String cluster : List.of(STANDBY, PRIMARY)) {
            if (Files.isDirectory(Path.of("/etc/postgresql", version, cluster))) {
                run("pg_dropcluster", "--stop", version, cluster);
            }
        }
    }

    private static String psql(int port, String sql) {
        try {
            return run("psql", "-h", "127.0.0.1", "-p", String.valueOf(port), "-U", "postgres", "-d", "postgres",
                    "-tAc", sql).trim();
        } catch (AssertionError e) {
            return "unavailable";
        }
    }

    private static void append(Path file, String text) {
        try {
            Files.writeString(file, text, StandardCharsets.UTF_8, java.nio.file.StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String run(String... command) {
        List<String> line = new ArrayList<>(List.of(command));
        try {
            Process process = new ProcessBuilder(line).redirectErrorStream(true).start();
            if (!process.waitFor(120, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                fail(String.join(" ", line) + " did not finish within 120 s");
            }
            String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (process.exitValue() != 0) {
                fail(String.join(" ", line) + " exited " + process.exitValue() + ": " + output.trim());
            }
            return output;
        } catch (IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
