package io.workqueue.faults;

import io.workqueue.testing.Skips;
import static org.junit.jupiter.api.Assertions.fail;

import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.pool.ConnectionPoolConfiguration;
import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactories;
import io.r2dbc.spi.ConnectionFactory;
import io.r2dbc.spi.ConnectionFactoryOptions;
import io.r2dbc.spi.ValidationDepth;
import io.workqueue.migrations.WorkQueueMigrations;
import io.workqueue.testing.TestDatabase;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The PostgreSQL server the fault scenarios run against, and the means to hurt it.
 *
 * <p>Scenarios that restart the server or kill its backends must never touch a server other
 * engineers share, so they run only against a dedicated cluster named by two variables:
 * {@value #URL_VARIABLE} (an R2DBC URL) and {@value #CLUSTER_VARIABLE} (the Debian cluster's
 * version and name, e.g. {@code "15 faults"}, for {@code pg_ctlcluster}). Without them such a
 * scenario is skipped with a message saying so, unless {@value #REQUIRED_VARIABLE} is
 * {@code true} (CI sets it), in which case it fails: in CI every scenario runs.
 *
 * <p>Scenarios that only need a server (no restarts, no kills) use the dedicated cluster when it is
 * configured, keeping their load off the shared one, and otherwise the ordinary test server
 * ({@link TestDatabase}).
 */
final class FaultServer {
    static final String URL_VARIABLE = "WORKQUEUE_FAULT_R2DBC_URL";
    static final String CLUSTER_VARIABLE = "WORKQUEUE_FAULT_PG_CLUSTER";
    static final String REQUIRED_VARIABLE = "WORKQUEUE_FAULTS_REQUIRED";

    private static final Logger log = LoggerFactory.getLogger(FaultServer.class);
    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    private final String url;
    private final String[] cluster; // {version, name}, or null when the server cannot be controlled

    private FaultServer(String url, String[] cluster) {
        this.url = url;
        this.cluster = cluster;
    }

    /**
     * A server this scenario may restart and whose backends it may kill; skips the scenario (fails
     * it in CI) when none is configured.
     */
    static FaultServer controllable() {
        String url = env(URL_VARIABLE);
        String cluster = env(CLUSTER_VARIABLE);
        if (url == null || cluster == null) {
            String why = "this scenario restarts PostgreSQL and kills its backends, so it needs a dedicated cluster: set "
                    + URL_VARIABLE + " (e.g. r2dbc:postgresql://postgres@127.0.0.1:5433/postgres) and "
                    + CLUSTER_VARIABLE + " (e.g. \"15 faults\"); .ci/run creates and starts one";
            if (required()) {
                fail(REQUIRED_VARIABLE + "=true but the server cannot be controlled here: " + why);
            }
            Skips.abort(why);
        }
        String[] parts = cluster.trim().split("\\s+");
        if (parts.length != 2) {
            fail(CLUSTER_VARIABLE + " must be \"<version> <name>\" but was \"" + cluster + "\"");
        }
        FaultServer server = new FaultServer(url, parts);
        server.ensureRunning();
        return server;
    }

    /** The dedicated cluster when configured, else the ordinary test server; never controlled. */
    static FaultServer any() {
        String url = env(URL_VARIABLE);
        if (url != null) {
            return new FaultServer(url, null);
        }
        if (required()) {
            fail(REQUIRED_VARIABLE + "=true but " + URL_VARIABLE + " is not set");
        }
        return new FaultServer(TestDatabase.url(), null);
    }

    /** A server at {@code url} that the test does not control (a multi-host failover URL, say). */
    static FaultServer at(String url) {
        return new FaultServer(url, null);
    }

    private static boolean required() {
        return "true".equalsIgnoreCase(env(REQUIRED_VARIABLE));
    }

    private static String env(String name) {
        String value = System.getenv(name);
        return value == null || value.isBlank() ? null : value;
    }

    String url() {
        return url;
    }

    /** A non-pooled factory: every {@code create()} opens a new connection. */
    ConnectionFactory plain() {
        return ConnectionFactories.get(ConnectionFactoryOptions.parse(url));
    }

    /**
     * A pool configured the way a user running against a server that may restart should configure
     * one: every acquisition is validated ({@code SELECT 1}, bounded), so a connection the server
     * dropped is discarded and replaced instead of handed out; idle connections are evicted in the
     * background; and acquiring, creating and validating are each bounded in time, so callers see
     * an error during an outage instead of queueing forever.
     */
    ConnectionPool pool(int maxSize) {
        return validatingPool(plain(), maxSize);
    }

    /** {@link #pool(int)}'s configuration over any {@code factory}. */
    static ConnectionPool validatingPool(ConnectionFactory factory, int maxSize) {
        return new ConnectionPool(ConnectionPoolConfiguration.builder(factory)
                .initialSize(0)
                .maxSize(maxSize)
                .validationQuery("SELECT 1")
                .maxValidationTime(Duration.ofSeconds(2))
                .maxIdleTime(Duration.ofSeconds(10))
                .backgroundEvictionInterval(Duration.ofSeconds(5))
                .maxCreateConnectionTime(Duration.ofSeconds(3))
                .maxAcquireTime(Duration.ofSeconds(5))
                .acquireRetry(1)
                .build());
    }

    /**
     * A pool as Spring Boot configures one by default, within {@link #validatingPool}'s time bounds:
     * it keeps {@code size} connections open (initial size and maximum size alike), and each
     * acquisition is validated as r2dbc-pool does without a validation query, by asking the
     * connection itself ({@code Connection.validate(depth)}). A connection that fails that is
     * discarded and the acquisition tried once more; one that meets two such connections in a row
     * fails with r2dbc-pool's own error, which carries no SQLSTATE. When the server goes, every idle
     * connection the pool keeps is dead at once.
     */
    static ConnectionPool depthValidatingPool(ConnectionFactory factory, int size, ValidationDepth depth) {
        return new ConnectionPool(ConnectionPoolConfiguration.builder(factory)
                .initialSize(size)
                .maxSize(size)
                .validationDepth(depth)
                .maxValidationTime(Duration.ofSeconds(2))
                .maxIdleTime(Duration.ofMinutes(30)) // Spring Boot's default
                .maxCreateConnectionTime(Duration.ofSeconds(3))
                .maxAcquireTime(Duration.ofSeconds(5))
                .acquireRetry(1)
                .build());
    }

    /** Creates the queue table for a fresh prefix on this server and returns the prefix. */
    String createTable() {
        String prefix = TestDatabase.uniquePrefix();
        ConnectionFactory factory = plain();
        WorkQueueMigrations.apply(factory, prefix).block(TIMEOUT);
        return prefix;
    }

    /** Runs SQL on a fresh connection, binding {@code binds} in order, and returns the first column of every row. */
    List<String> query(String sql, Object... binds) {
        return Mono.usingWhen(Mono.from(plain().create()),
                        c -> {
                            var statement = c.createStatement(sql);
                            for (int i = 0; i < binds.length; i++) {
                                statement.bind(i, binds[i]);
                            }
                            return Flux.from(statement.execute())
                                    .concatMap(r -> r.map((row, meta) -> String.valueOf(row.get(0))))
                                    .collectList();
                        },
                        Connection::close)
                .block(TIMEOUT);
    }

    long queryLong(String sql, Object... binds) {
        return Long.parseLong(query(sql, binds).get(0));
    }

    /**
     * Terminates every client backend of this server's database except the one issuing the
     * command; returns how many were terminated.
     */
    long terminateClientBackends() {
        requireControl();
        return queryLong("""
                SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))
                FROM pg_stat_activity
                WHERE datname = current_database()
                    AND backend_type = 'client backend'
                    AND pid <> pg_backend_pid()""");
    }

    /** Restarts the cluster (fast shutdown: open connections are terminated). */
    void restart() {
        pgCtlCluster("restart");
        awaitAccepting();
    }

    /** Stops the cluster (fast shutdown: open connections are terminated); {@link #start} brings it back. */
    void stop() {
        pgCtlCluster("stop");
    }

    /**
     * Stops the cluster as a crash would: immediate mode, no shutdown checkpoint, so the next start
     * runs crash recovery from the WAL. {@link #start} brings it back.
     */
    void crash() {
        pgCtlCluster("stop", "immediate");
    }

    /** Starts the cluster and waits until it accepts connections. */
    void start() {
        pgCtlCluster("start");
        awaitAccepting();
    }

    /**
     * Starts watching whether the server accepts connections: a fresh connection runs
     * {@code SELECT 1} every 20 ms, so the outage a client sees can be timed to the probe's
     * resolution rather than by how long {@code pg_ctlcluster} takes to return.
     */
    Watch watch() {
        return new Watch();
    }

    /** The result of every probe, as (nanoTime, ok) pairs; stop it with {@link #close}. */
    final class Watch implements AutoCloseable {
        private final java.util.Queue<long[]> probes = new java.util.concurrent.ConcurrentLinkedQueue<>();
        private final reactor.core.Disposable running;

        private Watch() {
            ConnectionFactory factory = plain();
            running = Flux.interval(Duration.ofMillis(20))
                    .onBackpressureDrop()
                    .concatMap(tick -> {
                        long at = System.nanoTime();
                        return Mono.usingWhen(Mono.from(factory.create()),
                                        c -> Flux.from(c.createStatement("SELECT 1").execute())
                                                .concatMap(r -> r.getRowsUpdated()).then(Mono.just(1L)),
                                        Connection::close)
                                .timeout(Duration.ofSeconds(1))
                                .onErrorReturn(0L)
                                .doOnNext(ok -> probes.add(new long[] {at, ok}));
                    }, 1)
                    .subscribe();
        }

        /** The first probe after {@code since} that failed, or -1. */
        long firstDownAfter(long since) {
            return first(since, 0);
        }

        /** The first probe after {@code since} that succeeded, or -1. */
        long firstUpAfter(long since) {
            return first(since, 1);
        }

        private long first(long since, long ok) {
            long first = Long.MAX_VALUE;
            for (long[] probe : probes) {
                if (probe[0] > since && probe[1] == ok && probe[0] < first) {
                    first = probe[0];
                }
            }
            return first == Long.MAX_VALUE ? -1 : first;
        }

        @Override
        public void close() {
            running.dispose();
        }
    }

    /** Starts the cluster if it is not running and waits until it accepts connections. */
    void ensureRunning() {
        requireControl();
        if (!accepting()) {
            log.warn("fault cluster {} {} is not accepting connections; starting it", cluster[0], cluster[1]);
            pgCtlCluster("start");
        }
        awaitAccepting();
    }

    private void requireControl() {
        if (cluster == null) {
            throw new IllegalStateException("this server is not under the test's control");
        }
    }

    private boolean accepting() {
        try {
            Mono.usingWhen(Mono.from(plain().create()),
                            c -> Flux.from(c.createStatement("SELECT 1").execute()).concatMap(r -> r.getRowsUpdated()).then(),
                            Connection::close)
                    .block(Duration.ofSeconds(5));
            return true;
        } catch (RuntimeException e) {
            return false;
        }
    }

    private void awaitAccepting() {
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (!accepting()) {
            if (System.nanoTime() > deadline) {
                fail("fault cluster did not accept connections within " + TIMEOUT);
            }
            try {
                Thread.sleep(100); // polling the server's readiness: there is nothing to await
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }
    }

    /** {@code pg_ctlcluster <version> <name> <action>}, bypassing systemd (there is none in CI). */
    private void pgCtlCluster(String action) {
        pgCtlCluster(action, "fast");
    }

    private void pgCtlCluster(String action, String mode) {
        requireControl();
        List<String> command = new ArrayList<>(List.of("pg_ctlcluster", "--skip-systemctl-redirect",
                cluster[0], cluster[1], action));
        if (!action.equals("start")) {
            command.addAll(List.of("-m", mode));
        }
        try {
            Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
            String output;
            if (!process.waitFor(60, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                fail(String.join(" ", command) + " did not finish within 60 s");
            }
            output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            if (process.exitValue() != 0) {
                fail(String.join(" ", command) + " exited " + process.exitValue() + ": " + output);
            }
            log.info("{}{}", String.join(" ", command), output.isEmpty() ? "" : ": " + output);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
