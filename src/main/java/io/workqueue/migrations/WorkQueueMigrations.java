package io.workqueue.migrations;

import io.r2dbc.spi.ConnectionFactory;
import io.workqueue.InvalidConfigException;
import io.workqueue.WorkQueueBackend;
import io.workqueue.WorkQueueConfig;
import io.workqueue.internal.base.TableNames;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import reactor.core.publisher.Mono;

/**
 * The schema of a work queue table, rendered for a table prefix.
 *
 * <p>The template is {@code sql/work_queue.sql} at the top of the project, packaged into the jar.
 * Every statement is {@code IF NOT EXISTS}, so applying it twice is a no-op, and applying it to a
 * table an earlier release created upgrades that table in place, keeping every item.
 *
 * <p><b>Versions.</b> The schema has a version, {@link #SCHEMA_VERSION}, recorded in the table's
 * comment; {@link #version} reads it (a table without the record is version 1, the first
 * release). Migration tools that apply numbered scripts once each get them from
 * {@link #versionedScript} (and as {@code sql/versions/V<n>__*.sql} in the project, packaged
 * under {@code io/workqueue/migrations/versions/}): V1 creates the first release's table, each
 * later one upgrades from the version before. A queue of this release needs its table at
 * {@link #SCHEMA_VERSION}.
 *
 * <p>The prefix is the one
 * value rendered into SQL, so it is validated first: it must make a plain identifier of every
 * table and index name the schema creates, within PostgreSQL's 63-byte limit. Thread-safe:
 * stateless.
 */
public final class WorkQueueMigrations {
    /** The schema version this release creates, upgrades to and needs. */
    public static final int SCHEMA_VERSION = 5;

    /** What each versioned script does, by version (index 0 is version 1). */
    private static final List<String> VERSION_SCRIPTS = List.of(
            "versions/V1__create_work_queue_items.sql",
            "versions/V2__requested_at.sql",
            "versions/V3__queues.sql",
            "versions/V4__claims_and_pause.sql",
            "versions/V5__trace_contexts.sql");

    /** The table every queue shares, before the prefix. */
    public static final String TABLE_BASE_NAME = TableNames.TABLE_BASE_NAME;

    private static final String TEMPLATE_RESOURCE = "work_queue.sql";
    private static final String PLACEHOLDER = "{{prefix}}";
    private WorkQueueMigrations() {}

    /**
     * The table name for a prefix.
     *
     * @param tablePrefix the table prefix, {@code ""} for the default table
     * @return {@code work_queue_items}, or {@code <prefix>_work_queue_items}
     * @throws InvalidConfigException if the prefix cannot make legal identifiers
     */
    public static String tableName(String tablePrefix) {
        validatePrefix(tablePrefix);
        return TableNames.table(tablePrefix);
    }

    /**
     * The whole DDL for {@code tablePrefix} as one migration body, for a migration tool that
     * applies scripts itself.
     *
     * @param tablePrefix the table prefix, {@code ""} for the default table
     * @return the rendered {@code sql/work_queue.sql}: idempotent statements separated by
     *         {@code ;}
     * @throws InvalidConfigException if the prefix cannot make legal identifiers
     */
    public static String sql(String tablePrefix) {
        validatePrefix(tablePrefix);
        return Template.TEXT.replace(PLACEHOLDER, TableNames.rendered(tablePrefix));
    }

    /**
     * The same DDL as {@link #sql(String)} split into executable statements, comments and blank
     * lines removed.
     *
     * @param tablePrefix the table prefix, {@code ""} for the default table
     * @return the statements, in order, each without its trailing {@code ;}; immutable
     * @throws InvalidConfigException if the prefix cannot make legal identifiers
     */
    public static List<String> statements(String tablePrefix) {
        List<String> statements = new ArrayList<>();
        StringBuilder current = new StringBuilder();
        for (String line : sql(tablePrefix).split("\n")) {
            String code = stripComment(line).strip();
            if (code.isEmpty()) {
                continue;
            }
            if (current.length() > 0) {
                current.append('\n');
            }
            current.append(code);
            // The template has no string literals or bodies containing ';', so a trailing ';' ends a statement.
            if (code.endsWith(";")) {
                current.setLength(current.length() - 1);
                statements.add(current.toString());
                current.setLength(0);
            }
        }
        if (current.length() > 0) {
            statements.add(current.toString());
        }
        return List.copyOf(statements);
    }

    /**
     * Checks that {@code tablePrefix} is {@code ""} or a plain identifier (lower-case ASCII
     * letters, digits, underscores; not starting with a digit) short enough that every name the
     * schema derives from it fits in 63 bytes.
     *
     * @param tablePrefix the prefix to check
     * @throws InvalidConfigException naming the prefix and the rule it breaks, {@code null}
     *                                included
     */
    public static void validatePrefix(String tablePrefix) {
        String problem = TableNames.prefixProblem(tablePrefix);
        if (problem != null) {
            throw new InvalidConfigException(problem);
        }
    }

    /**
     * The versioned script that takes the table of {@code tablePrefix} from {@code version - 1} to
     * {@code version} (version 1 creates it), rendered for the prefix, as one migration body.
     *
     * @param version     the version the script reaches, 1 to {@link #SCHEMA_VERSION}
     * @param tablePrefix the table prefix, {@code ""} for the default table
     * @return the script, idempotent like {@link #sql(String)}
     * @throws InvalidConfigException if the prefix cannot make legal identifiers, or there is no
     *     such version (1 to {@link #SCHEMA_VERSION})
     */
    public static String versionedScript(int version, String tablePrefix) {
        validatePrefix(tablePrefix);
        if (version < 1 || version > SCHEMA_VERSION) {
            throw new InvalidConfigException("schema versions run from 1 to " + SCHEMA_VERSION + ", but was " + version);
        }
        return load(VERSION_SCRIPTS.get(version - 1)).replace(PLACEHOLDER, TableNames.rendered(tablePrefix));
    }

    /**
     * The schema version of the table of {@code config}'s {@link WorkQueueConfig#tablePrefix()}:
     * {@link #version(ConnectionFactory, String)} with the prefix taken from the configuration the
     * queue uses, so it is stated once.
     *
     * @param connectionFactory where to read the catalog
     * @param config            the queue's configuration
     * @return a cold {@code Mono} of the version; a {@code null} argument is signalled as
     *         {@code NullPointerException} at subscription
     */
    public static Mono<Integer> version(ConnectionFactory connectionFactory, WorkQueueConfig config) {
        return Mono.defer(() -> version(connectionFactory, Objects.requireNonNull(config, "config").tablePrefix()));
    }

    /**
     * The schema version of the table of {@code tablePrefix}: 0 when there is no such table,
     * else the version its comment records (1 when it records none: the first release wrote no
     * comment).
     *
     * <p>Cold: subscribing runs one catalog read on one connection from the factory, closed
     * however it ends (cancelling it also cancels the read on the server); emits on the driver's
     * thread. Errors: an invalid
     * prefix as {@link InvalidConfigException}, a {@code null} factory as
     * {@code NullPointerException}, and the connection's own failures.
     *
     * @param connectionFactory where to read the catalog
     * @param tablePrefix       the table prefix, {@code ""} for the default table
     * @return a cold {@code Mono} of the version: 0 (no table), or 1 to {@link #SCHEMA_VERSION}
     *         (or higher, for a table a newer release made)
     */
    public static Mono<Integer> version(ConnectionFactory connectionFactory, String tablePrefix) {
        return Mono.defer(() -> {
            Objects.requireNonNull(connectionFactory, "connectionFactory");
            validatePrefix(tablePrefix);
            return WorkQueueBackend.installed().schemaVersion(connectionFactory, tablePrefix);
        });
    }

    /**
     * Creates or upgrades the table of {@code config}'s {@link WorkQueueConfig#tablePrefix()}:
     * {@link #apply(ConnectionFactory, String)} with the prefix taken from the configuration the
     * queue uses, so it is stated once:
     *
     * <pre>{@code
     * WorkQueueConfig config = WorkQueueConfig.builder("thumbnails").tablePrefix("media").build();
     * WorkQueueMigrations.apply(pool, config).block(); // at start-up, off any Reactor thread
     * ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(pool, String.class).config(config).build();
     * }</pre>
     *
     * @param connectionFactory where to create the table
     * @param config            the queue's configuration
     * @return a cold {@code Mono} that completes once the table is current; a {@code null}
     *         argument is signalled as {@code NullPointerException} at subscription
     */
    public static Mono<Void> apply(ConnectionFactory connectionFactory, WorkQueueConfig config) {
        return Mono.defer(() -> apply(connectionFactory, Objects.requireNonNull(config, "config").tablePrefix()));
    }

    /**
     * Creates the table and its indexes if they do not exist, one statement at a time on one
     * connection from {@code connectionFactory}.
     *
     * <p>Cold: nothing happens until subscription, and each subscription applies the schema
     * again (a no-op once it is current). Completes on the driver's thread once the transaction
     * has committed; the connection is closed on completion and error. Cancelling (a start-up
     * timeout, say) cancels the statement in flight on the server and closes the connection, so
     * no DDL is left waiting there for the table's lock, with the fleet's statements queued
     * behind it; the transaction rolls back. Errors: an invalid prefix as
     * {@link InvalidConfigException}, a {@code null} factory as {@code NullPointerException}, and
     * the statements' own failures (the transaction is then rolled back).
     *
     * <p>The statements run in one transaction that first takes an advisory lock named for the
     * table, so services starting together may all apply the schema: concurrent
     * {@code CREATE ... IF NOT EXISTS} of one name otherwise races in the catalog and fails with a
     * unique violation (SQLSTATE 23505).
     *
     * <p>A table at an earlier {@link #version} is upgraded in place to {@link #SCHEMA_VERSION},
     * keeping every item; a table already there is left alone (not even locked), so services may
     * call this at every start while others run. A table from a newer release than this one is
     * also left alone.
     *
     * @param connectionFactory where to create the table
     * @param tablePrefix       the table prefix, {@code ""} for the default table
     * @return a cold {@code Mono} that completes once the table is current
     */
    public static Mono<Void> apply(ConnectionFactory connectionFactory, String tablePrefix) {
        return Mono.defer(() -> {
            Objects.requireNonNull(connectionFactory, "connectionFactory");
            List<String> statements = statements(tablePrefix);
            return WorkQueueBackend.installed().applySchema(connectionFactory, tablePrefix, statements, SCHEMA_VERSION);
        });
    }

    private static String load(String resource) {
        try (InputStream in = WorkQueueMigrations.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException("DDL " + resource + " is missing from the jar");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read DDL " + resource, e);
        }
    }

    private static String stripComment(String line) {
        int comment = line.indexOf("--");
        return comment < 0 ? line : line.substring(0, comment);
    }

    /** Loaded once, on first use. */
    private static final class Template {
        static final String TEXT = load();

        private static String load() {
            return WorkQueueMigrations.load(TEMPLATE_RESOURCE);
        }
    }
}
