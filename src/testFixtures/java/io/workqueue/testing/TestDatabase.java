package io.workqueue.testing;

import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.pool.ConnectionPoolConfiguration;
import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactories;
import io.r2dbc.spi.ConnectionFactory;
import io.r2dbc.spi.ConnectionFactoryOptions;
import io.workqueue.migrations.WorkQueueMigrations;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.postgresql.PostgreSQLContainer;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The real PostgreSQL server every integration test runs against, found once per JVM in this
 * order: the {@code WORKQUEUE_TEST_R2DBC_URL} environment variable (CI points it at the machine's
 * own server); else a Testcontainers {@code postgres:15} when a Docker daemon answers; else an
 * embedded PostgreSQL 15 started in-process from Maven artifacts. Tests isolate themselves with
 * unique table prefixes and queue names, so classes can share the server.
 *
 * <p>One source for the library's tests, the starter's and users' (it ships in
 * {@code reactive-workqueue-test}, beside {@code WorkQueueTesting}). Its methods block: call them
 * from a test's own thread. Thread-safe.
 */
public final class TestDatabase {
    public static final String URL_VARIABLE = "WORKQUEUE_TEST_R2DBC_URL";
    /** An R2DBC URL nothing listens on: for proving that nothing connects. */
    public static final String UNREACHABLE_URL = "r2dbc:postgresql://postgres@127.0.0.1:1/test";
    private static final Logger log = LoggerFactory.getLogger(TestDatabase.class);
    private static final AtomicInteger COUNTER = new AtomicInteger();

    private TestDatabase() {}

    /** The R2DBC URL of the test server. */
    public static String url() {
        return Server.URL;
    }

    /** A shared pool over the test server (up to 16 connections). Never close it. */
    public static ConnectionFactory pool() {
        return Server.POOL;
    }

    /** A new pool with at most {@code maxSize} connections; the caller disposes it. */
    public static ConnectionPool newPool(int maxSize) {
        return new ConnectionPool(ConnectionPoolConfiguration.builder(plain())
                .initialSize(0)
                .maxSize(maxSize)
                .maxAcquireTime(Duration.ofSeconds(30))
                .validationQuery("SELECT 1")
                .build());
    }

    /** A non-pooled factory: every {@code create()} opens a new connection. */
    public static ConnectionFactory plain() {
        return ConnectionFactories.get(ConnectionFactoryOptions.parse(Server.URL));
    }

    /** A fresh, valid table prefix, unique within this JVM run. */
    public static String uniquePrefix() {
        return "t" + COUNTER.incrementAndGet() + "_" + UUID.randomUUID().toString().substring(0, 8);
    }

    /** A fresh queue name, unique within this JVM run. */
    public static String uniqueName(String hint) {
        return hint + "-" + COUNTER.incrementAndGet() + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    /** Creates a table for a fresh prefix and returns the prefix. */
    public static String createTable() {
        String prefix = uniquePrefix();
        WorkQueueMigrations.apply(pool(), prefix).block(Duration.ofSeconds(30));
        return prefix;
    }

    /** Runs statements (no parameters) on one connection, in order. */
    public static void execute(String... statements) {
        Mono.usingWhen(pool().create(),
                        c -> Flux.fromArray(statements)
                                .concatMap(s -> Flux.from(c.createStatement(s).execute()).concatMap(r -> r.getRowsUpdated()))
                                .then(),
                        Connection::close)
                .block(Duration.ofSeconds(30));
    }

    /** The first column of every row of a query, as strings. */
    public static List<String> queryStrings(String sql, Object... binds) {
        return Mono.usingWhen(pool().create(),
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
                .block(Duration.ofSeconds(30));
    }

    /** The single value of a query returning one row, as a string. */
    public static String queryString(String sql, Object... binds) {
        return queryStrings(sql, binds).get(0);
    }

    /** The single value of a query returning one number. */
    public static long queryLong(String sql, Object... binds) {
        return Long.parseLong(queryStrings(sql, binds).get(0));
    }

    /** Found lazily, once, the first time a test asks. */
    private static final class Server {
        static final String URL = locate();
        static final ConnectionPool POOL = newPool(16);

        private static String locate() {
            String fromEnvironment = System.getenv(URL_VARIABLE);
            if (fromEnvironment != null && !fromEnvironment.isBlank()) {
                log.info("tests use the server at {} (from {})", fromEnvironment, URL_VARIABLE);
                return fromEnvironment;
            }
            if (dockerAvailable()) {
                PostgreSQLContainer container = new PostgreSQLContainer("postgres:15");
                container.start();
                Runtime.getRuntime().addShutdownHook(new Thread(container::stop));
                String url = String.format(Locale.ROOT, "r2dbc:postgresql://%s:%s@%s:%d/%s",
                        container.getUsername(), container.getPassword(), container.getHost(),
                        container.getMappedPort(5432), container.getDatabaseName());
                log.info("tests use a Testcontainers PostgreSQL at {}", url);
                return url;
            }
            try {
                EmbeddedPostgres embedded = EmbeddedPostgres.builder().start();
                Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                    try {
                        embedded.close();
                    } catch (IOException e) {
                        log.warn("embedded PostgreSQL did not stop cleanly", e);
                    }
                }));
                String url = "r2dbc:postgresql://postgres@localhost:" + embedded.getPort() + "/postgres";
                log.info("tests use an embedded PostgreSQL at {}", url);
                return url;
            } catch (IOException e) {
                throw new UncheckedIOException("no " + URL_VARIABLE + ", no Docker, and embedded PostgreSQL failed", e);
            }
        }

        /**
         * Whether a Docker daemon can be reached. Testcontainers is asked only when one plausibly
         * runs (DOCKER_HOST is set, or the default socket exists): asked on a machine that has a
         * docker client but no daemon, it logs an ERROR with a stack trace before answering no,
         * which reads like a failure in a test run that is fine.
         */
        private static boolean dockerAvailable() {
            String dockerHost = System.getenv("DOCKER_HOST");
            boolean plausible = (dockerHost != null && !dockerHost.isBlank())
                    || Files.exists(Path.of("/var/run/docker.sock"))
                    || Files.exists(Path.of(System.getProperty("user.home"), ".docker", "run", "docker.sock"));
            if (!plausible) {
                log.info("no Docker daemon here (no DOCKER_HOST, no docker.sock): not trying Testcontainers");
                return false;
            }
            try {
                return DockerClientFactory.instance().isDockerAvailable();
            } catch (RuntimeException | LinkageError e) {
                return false;
            }
        }
    }
}
