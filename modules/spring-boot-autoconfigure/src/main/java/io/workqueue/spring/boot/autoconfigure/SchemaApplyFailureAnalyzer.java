package io.workqueue.spring.boot.autoconfigure;

import io.r2dbc.spi.R2dbcException;
import io.workqueue.migrations.WorkQueueMigrations;
import java.io.IOException;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.UnknownHostException;
import java.util.concurrent.TimeoutException;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.core.env.Environment;

/**
 * Explains a start that failed because the queues' tables could not be created
 * ({@code workqueue.schema.apply=true}): whether the application could not connect (with the URL,
 * its password masked, and the network's or the server's words), ran out of time, or refused the
 * DDL, and what to change. Without it the cause sits several "Caused by" deep under the
 * bean-creation errors of whatever bean first needed a queue.
 *
 * <p>Registered in {@code META-INF/spring.factories}; Spring Boot creates it with the failed
 * application's {@link Environment}, for the URL.
 */
final class SchemaApplyFailureAnalyzer extends AbstractFailureAnalyzer<WorkQueueSchemaException> {
    /** A password in the URL's user information: {@code //user:password@}. */
    private static final Pattern URL_PASSWORD = Pattern.compile("(//[^/:@]*:)[^/@]*@");
    /** A password as a URL option: {@code ?password=...} or {@code &password=...}. */
    private static final Pattern OPTION_PASSWORD = Pattern.compile("([?&]password=)[^&]*", Pattern.CASE_INSENSITIVE);

    private final Environment environment;

    SchemaApplyFailureAnalyzer(Environment environment) {
        this.environment = environment;
    }

    @Override
    protected FailureAnalysis analyze(Throwable rootFailure, WorkQueueSchemaException failure) {
        Throwable cause = failure.getCause();
        String table = WorkQueueMigrations.tableName(failure.tablePrefix());
        String database = database();
        String why = cause == null ? failure.getMessage() : describe(cause);
        if (cause instanceof TimeoutException) {
            return new FailureAnalysis(
                    "workqueue.schema.apply is set, and creating the work queue table " + table + " at " + database
                            + " did not finish within workqueue.schema.timeout (" + failure.timeout() + ").",
                    "Check that the database answers from this host and that no other transaction holds a lock on "
                            + table + " (a migration running elsewhere, say); raise workqueue.schema.timeout if the "
                            + "database is just slow, or set workqueue.schema.apply=false and let a migration tool "
                            + "create the table (WorkQueueMigrations.sql gives the DDL).",
                    failure);
        }
        if (unreachable(cause)) {
            return new FailureAnalysis(
                    "workqueue.schema.apply is set, and the work queue table " + table
                            + " could not be created: the application could not connect to the database.\n\n"
                            + "    Database: " + database + "\n"
                            + "    Error: " + why,
                    "Check spring.r2dbc.url (host, port, database name) and the credentials "
                            + "(spring.r2dbc.username, spring.r2dbc.password), and that PostgreSQL accepts "
                            + "connections from this host. Or, if a migration tool creates the table, set "
                            + "workqueue.schema.apply=false: the queues then connect only when first used.",
                    failure);
        }
        return new FailureAnalysis(
                "workqueue.schema.apply is set, and the database at " + database
                        + " refused to create or upgrade the work queue table " + table + ".\n\n"
                        + "    Error: " + why,
                "Give the database user the right to create tables and indexes in its schema (GRANT CREATE), or "
                        + "set workqueue.schema.apply=false and let a migration tool with that right create the "
                        + "table (WorkQueueMigrations.sql gives the DDL).",
                failure);
    }

    /** The application's R2DBC URL with any password masked, or what else names the database. */
    private String database() {
        String url = environment.getProperty("spring.r2dbc.url");
        if (url == null || url.isBlank()) {
            return "the application's R2DBC ConnectionFactory (no spring.r2dbc.url is set)";
        }
        return mask(url);
    }

    /** {@code url} with the password, if it holds one, replaced by asterisks. */
    static String mask(String url) {
        String masked = URL_PASSWORD.matcher(url).replaceAll("$1******@");
        return OPTION_PASSWORD.matcher(masked).replaceAll("$1******");
    }

    /**
     * Whether {@code cause} says the database could not be reached or would not let this user in:
     * a network failure, a connection-class SQLSTATE (08), a refused login (28), a database that
     * does not exist (3D000) or a server that is starting or shutting down (57P03).
     */
    private static boolean unreachable(@Nullable Throwable cause) {
        for (Throwable t = cause; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof ConnectException || t instanceof UnknownHostException || t instanceof NoRouteToHostException
                    || t.getClass().getName().equals("io.netty.channel.ConnectTimeoutException")) {
                return true;
            }
            if (t instanceof R2dbcException r2dbc && r2dbc.getSqlState() != null) {
                String state = r2dbc.getSqlState();
                if (state.startsWith("08") || state.startsWith("28") || state.equals("3D000") || state.equals("57P03")) {
                    return true;
                }
            }
        }
        return false;
    }

    /**
     * The most telling words of {@code cause}: the driver's message with its SQLSTATE, and the
     * network's after it when it says something more.
     */
    private static String describe(Throwable cause) {
        String driver = null;
        String network = null;
        for (Throwable t = cause; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (driver == null && t instanceof R2dbcException r2dbc) {
                String state = r2dbc.getSqlState();
                driver = r2dbc.getMessage()
                        + (state == null || r2dbc.getMessage().contains(state) ? "" : " (SQLSTATE " + state + ")");
            }
            if (network == null && (t instanceof IOException || t instanceof UnknownHostException)) {
                network = t.getMessage();
            }
        }
        if (driver == null) {
            return network != null ? network : String.valueOf(cause.getMessage());
        }
        return network != null && !driver.contains(network) ? driver + "; the network said: " + network : driver;
    }
}
