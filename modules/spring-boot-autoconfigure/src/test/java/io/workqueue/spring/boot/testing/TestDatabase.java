package io.workqueue.spring.boot.testing;

import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactories;
import io.r2dbc.spi.ConnectionFactory;
import io.r2dbc.spi.ConnectionFactoryOptions;
import io.workqueue.migrations.WorkQueueMigrations;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The real PostgreSQL server the starter's tests run against: the one at
 * {@code WORKQUEUE_TEST_R2DBC_URL} (CI points it at the machine's own server), else an embedded
 * PostgreSQL 15 started once per JVM from Maven artifacts. Tests isolate themselves with unique table
 * prefixes and queue names.
 */
public final class TestDatabase {
    /** The environment variable naming the server, as an R2DBC URL. */
    public static final String URL_VARIABLE = "WORKQUEUE_TEST_R2DBC_URL";
    /** An R2DBC URL nothing listens on: for proving that nothing connects. */
    public static final String UNREACHABLE_URL = "r2dbc:postgresql://postgres@127.0.0.1:1/test";
    private static final AtomicInteger COUNTER = new AtomicInteger();

    private TestDatabase() {}

    /** The server's R2DBC URL. */
    public static String url() {
        return Server.URL;
    }

    /** A non-pooled factory over the server. */
    public static ConnectionFactory plain() {
        return ConnectionFactories.get(ConnectionFactoryOptions.parse(Server.URL));
    }

    /** A fresh, valid table prefix. */
    public static String uniquePrefix() {
        return "s" + COUNTER.incrementAndGet() + "_" + UUID.randomUUID().toString().substring(0, 8);
    }

    /** A fresh queue bean name (a valid property key). */
    public static String uniqueName(String hint) {
        return hint + COUNTER.incrementAndGet() + UUID.randomUUID().toString().substring(0, 8);
    }

    /** Creates the table of a fresh prefix and returns the prefix. */
    public static String createTable() {
        String prefix = uniquePrefix();
        WorkQueueMigrations.apply(plain(), prefix).block(Duration.ofSeconds(30));
        return prefix;
    }

    /** The first column of the first row of {@code sql}, as a string (null for SQL NULL). */
    public static String queryString(String sql, Object... binds) {
        return Mono.usingWhen(plain().create(),
                        c -> {
                            var statement = c.createStatement(sql);
                            for (int i = 0; i < binds.length; i++) {
                                statement.bind(i, binds[i]);
                            }
                            return Flux.from(statement.execute())
                                    .concatMap(r -> r.map((row, meta) -> String.valueOf(row.get(0))))
                                    .next();
                        },
                        Connection::close)
                .block(Duration.ofSeconds(30));
    }

    /** Found once, the first time a test asks. */
    private static final class Server {
        static final String URL = locate();

        private static String locate() {
            String fromEnvironment = System.getenv(URL_VARIABLE);
            if (fromEnvironment != null && !fromEnvironment.isBlank()) {
                return fromEnvironment;
            }
            try {
                EmbeddedPostgres embedded = EmbeddedPostgres.builder().start();
                Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                    try {
                        embedded.close();
                    } catch (IOException e) {
                        // The JVM is exiting; nothing left to tell.
                    }
                }));
                return "r2dbc:postgresql://postgres@localhost:" + embedded.getPort() + "/postgres";
            } catch (IOException e) {
                throw new UncheckedIOException("no " + URL_VARIABLE + " and embedded PostgreSQL failed", e);
            }
        }
    }
}
