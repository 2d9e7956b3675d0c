package io.workqueue.migrations;

import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactory;
import io.workqueue.InvalidConfigException;
import io.workqueue.internal.Identifiers;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The schema of a work queue table, rendered for a table prefix.
 *
 * <p>The template is {@code sql/work_queue.sql} at the top of the project, packaged into the jar.
 * Every statement is {@code IF NOT EXISTS}, so applying it twice is a no-op. The prefix is the one
 * value rendered into SQL, so it is validated first: it must make a plain identifier of every
 * table and index name the schema creates, within PostgreSQL's 63-byte limit. Thread-safe:
 * stateless.
 */
public final class WorkQueueMigrations {
    /** The table every queue shares, before the prefix. */
    public static final String TABLE_BASE_NAME = "work_queue_items";

    private static final String TEMPLATE_RESOURCE = "work_queue.sql";
    private static final String PLACEHOLDER = "{{prefix}}";
    /** The longest name the schema derives from the table name: its reaper index. */
    private static final String LONGEST_SUFFIX = "_reap_idx";

    private WorkQueueMigrations() {}

    /** The table name for a prefix: {@code work_queue_items} or {@code <prefix>_work_queue_items}. */
    public static String tableName(String tablePrefix) {
        validatePrefix(tablePrefix);
        return renderedPrefix(tablePrefix) + TABLE_BASE_NAME;
    }

    /**
     * The whole DDL for {@code tablePrefix} as one migration body.
     *
     * @throws InvalidConfigException if the prefix cannot make legal identifiers
     */
    public static String sql(String tablePrefix) {
        validatePrefix(tablePrefix);
        return Template.TEXT.replace(PLACEHOLDER, renderedPrefix(tablePrefix));
    }

    /**
     * The same DDL split into executable statements, comments and blank lines removed.
     *
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
     * @throws InvalidConfigException naming the prefix and the rule it breaks
     */
    public static void validatePrefix(String tablePrefix) {
        if (tablePrefix == null) {
            throw new InvalidConfigException("tablePrefix must not be null; use \"\" for the default table");
        }
        if (tablePrefix.isEmpty()) {
            return;
        }
        Identifiers.requirePlain("tablePrefix", tablePrefix);
        String longest = renderedPrefix(tablePrefix) + TABLE_BASE_NAME + LONGEST_SUFFIX;
        if (longest.length() > Identifiers.MAX_IDENTIFIER_BYTES) {
            throw new InvalidConfigException("tablePrefix must be at most "
                    + (Identifiers.MAX_IDENTIFIER_BYTES - (longest.length() - tablePrefix.length()))
                    + " bytes so that index " + longest + " fits PostgreSQL's "
                    + Identifiers.MAX_IDENTIFIER_BYTES + "-byte limit, but was " + tablePrefix.length());
        }
    }

    /**
     * Creates the table and its indexes if they do not exist, one statement at a time on one
     * connection from {@code connectionFactory}. Cold: nothing happens until subscription; the
     * connection is closed on completion, error and cancellation. An invalid prefix is signalled
     * as {@code Mono.error(InvalidConfigException)}, a null factory as
     * {@code Mono.error(NullPointerException)}.
     *
     * <p>The statements run in one transaction that first takes an advisory lock named for the
     * table, so services starting together may all apply the schema: concurrent
     * {@code CREATE ... IF NOT EXISTS} of one name otherwise races in the catalog and fails with a
     * unique violation (SQLSTATE 23505).
     */
    public static Mono<Void> apply(ConnectionFactory connectionFactory, String tablePrefix) {
        return Mono.defer(() -> {
            Objects.requireNonNull(connectionFactory, "connectionFactory");
            List<String> statements = statements(tablePrefix);
            String lockName = "reactive-workqueue schema " + tableName(tablePrefix);
            return Mono.usingWhen(
                    connectionFactory.create(),
                    connection -> Mono.usingWhen(
                            Mono.from(connection.beginTransaction()).thenReturn(connection),
                            tx -> Flux.from(connection.createStatement(SCHEMA_LOCK).bind(0, lockName).execute())
                                    .concatMap(result -> result.map((row, meta) -> 1))
                                    .thenMany(Flux.fromIterable(statements).concatMap(sql -> execute(connection, sql)))
                                    .then(),
                            tx -> connection.commitTransaction(),
                            (tx, error) -> connection.rollbackTransaction(),
                            tx -> connection.rollbackTransaction()),
                    Connection::close);
        });
    }

    /** Serialises concurrent applies of one table's schema until their transaction ends. */
    private static final String SCHEMA_LOCK = "SELECT pg_advisory_xact_lock(hashtext($1::text))";

    private static Mono<Void> execute(Connection connection, String sql) {
        return Flux.from(connection.createStatement(sql).execute())
                .concatMap(result -> result.getRowsUpdated())
                .then();
    }

    private static String renderedPrefix(String tablePrefix) {
        return tablePrefix.isEmpty() ? "" : tablePrefix + "_";
    }

    private static String stripComment(String line) {
        int comment = line.indexOf("--");
        return comment < 0 ? line : line.substring(0, comment);
    }

    /** Loaded once, on first use. */
    private static final class Template {
        static final String TEXT = load();

        private static String load() {
            try (InputStream in = WorkQueueMigrations.class.getResourceAsStream(TEMPLATE_RESOURCE)) {
                if (in == null) {
                    throw new IllegalStateException("DDL template " + TEMPLATE_RESOURCE + " is missing from the jar");
                }
                return new String(in.readAllBytes(), StandardCharsets.UTF_8);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read DDL template " + TEMPLATE_RESOURCE, e);
            }
        }
    }
}
