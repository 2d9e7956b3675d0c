package io.workqueue.examples.support;

import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.pool.ConnectionPoolConfiguration;
import io.r2dbc.spi.ConnectionFactories;
import io.r2dbc.spi.ConnectionFactory;
import io.r2dbc.spi.ConnectionFactoryOptions;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;

/**
 * The PostgreSQL server an example runs against: the one at {@code WORKQUEUE_R2DBC_URL} when that
 * variable is set, otherwise an embedded PostgreSQL 15 started in-process (from Maven artifacts, so
 * a fresh machine needs only Java and Maven). Close it to stop the embedded server.
 */
public final class DemoDatabase implements AutoCloseable {
    /** The environment variable naming an existing server, as an R2DBC URL. */
    public static final String URL_VARIABLE = "WORKQUEUE_R2DBC_URL";

    private final String url;
    private final String description;
    private final EmbeddedPostgres embedded;

    private DemoDatabase(String url, String description, EmbeddedPostgres embedded) {
        this.url = url;
        this.description = description;
        this.embedded = embedded;
    }

    /**
     * Finds or starts the server. An embedded one is also stopped by a JVM shutdown hook, so that a
     * program interrupted with Ctrl-C leaves no PostgreSQL process behind.
     */
    public static DemoDatabase start() {
        return start(true);
    }

    /**
     * Finds or starts the server; {@code stopOnExit} false leaves stopping an embedded one to the
     * caller's {@link #close()} alone. A Spring application wants that: the JVM runs shutdown hooks
     * concurrently, so a hook of the server's own would stop PostgreSQL while the application's
     * context is still closing (its listener and pool would lose their connections mid-shutdown);
     * the context closes the server itself, last, as a bean.
     */
    public static DemoDatabase start(boolean stopOnExit) {
        String fromEnvironment = System.getenv(URL_VARIABLE);
        if (fromEnvironment != null && !fromEnvironment.isBlank()) {
            return new DemoDatabase(fromEnvironment, fromEnvironment + " (from " + URL_VARIABLE + ")", null);
        }
        try {
            EmbeddedPostgres embedded = EmbeddedPostgres.builder().setRegisterShutdownHook(stopOnExit).start();
            String url = "r2dbc:postgresql://postgres@localhost:" + embedded.getPort() + "/postgres";
            return new DemoDatabase(url, "an embedded PostgreSQL at " + url + " (set " + URL_VARIABLE
                    + " to use your own)", embedded);
        } catch (IOException e) {
            throw new UncheckedIOException("could not start an embedded PostgreSQL; set " + URL_VARIABLE, e);
        }
    }

    /** The R2DBC URL. */
    public String url() {
        return url;
    }

    /** Which server this is, for a human. */
    public String description() {
        return description;
    }

    /** A non-pooled factory, as a notification listener needs. */
    public ConnectionFactory plainFactory() {
        return ConnectionFactories.get(ConnectionFactoryOptions.parse(url));
    }

    /** A pool of at most {@code maxSize} connections; the caller disposes it. */
    public ConnectionPool pool(int maxSize) {
        return new ConnectionPool(ConnectionPoolConfiguration.builder(plainFactory())
                .maxSize(maxSize)
                .maxAcquireTime(Duration.ofSeconds(30))
                .build());
    }

    @Override
    public void close() throws IOException {
        if (embedded != null) {
            embedded.close();
        }
    }
}
