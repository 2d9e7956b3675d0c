package io.workqueue.topologies;

import io.workqueue.testing.Skips;
import static org.junit.jupiter.api.Assertions.fail;

import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.pool.ConnectionPoolConfiguration;
import io.r2dbc.spi.ConnectionFactories;
import io.r2dbc.spi.ConnectionFactory;
import io.r2dbc.spi.ConnectionFactoryOptions;
import java.time.Duration;

/**
 * A real PgBouncer in {@code pool_mode = transaction} in front of the test server, as
 * {@code .ci/run} starts it: {@value #URL_VARIABLE} is its base URL (no database), and it serves
 * the test database under two names, {@code test} (a few server connections) and
 * {@code test_single} (one, so that two clients are certain to share it). Without the variable the
 * pooler tests are skipped with a message, unless {@value #REQUIRED_VARIABLE} is {@code true} (CI):
 * then they fail.
 */
final class PgBouncer {
    static final String URL_VARIABLE = "WORKQUEUE_PGBOUNCER_R2DBC_URL";
    static final String REQUIRED_VARIABLE = "WORKQUEUE_PGBOUNCER_REQUIRED";
    /**
     * The driver setting that makes r2dbc-postgresql work behind a transaction-mode pooler: no
     * statement cache, so every statement is parsed as the unnamed statement, which lives only
     * until the transaction that used it ends, instead of a named one ({@code S_0}, ...) that stays
     * on whichever server connection the pooler happened to hand out.
     */
    static final String WITHOUT_STATEMENT_CACHE = "preparedStatementCacheQueries=0";

    private PgBouncer() {}

    /** The pooler's URL for {@code database}, with {@code options} as a query string ("" for none). */
    static String url(String database, String options) {
        String base = System.getenv(URL_VARIABLE);
        if (base == null || base.isBlank()) {
            String why = "no PgBouncer: " + URL_VARIABLE + " is not set (.ci/run starts one on port 6432)";
            if ("true".equalsIgnoreCase(System.getenv(REQUIRED_VARIABLE))) {
                fail(REQUIRED_VARIABLE + "=true but " + why);
            }
            Skips.abort(why);
        }
        return base + "/" + database + (options.isEmpty() ? "" : "?" + options);
    }

    /** A non-pooled factory through the pooler. */
    static ConnectionFactory plain(String database, String options) {
        return ConnectionFactories.get(ConnectionFactoryOptions.parse(url(database, options)));
    }

    /** An r2dbc pool of up to {@code maxSize} client connections to the pooler. */
    static ConnectionPool pool(String database, String options, int maxSize) {
        return new ConnectionPool(ConnectionPoolConfiguration.builder(plain(database, options))
                .initialSize(0)
                .maxSize(maxSize)
                .maxAcquireTime(Duration.ofSeconds(30))
                .validationQuery("SELECT 1")
                .build());
    }
}
