package io.workqueue.migrations;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.workqueue.InvalidConfigException;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class WorkQueueMigrationsTest {
    /** Every identifier the DDL creates: the table and its two indexes. */
    private static final Pattern CREATED = Pattern.compile(
            "CREATE (?:TABLE|INDEX) IF NOT EXISTS (\\S+)");

    @Test
    void theEmptyPrefixRendersTheDefaultTable() {
        String sql = WorkQueueMigrations.sql("");
        assertTrue(sql.contains("CREATE TABLE IF NOT EXISTS work_queue_items ("), sql);
        assertTrue(sql.contains("CREATE INDEX IF NOT EXISTS work_queue_items_due_idx"), sql);
        assertTrue(sql.contains("CREATE INDEX IF NOT EXISTS work_queue_items_reap_idx"), sql);
        assertFalse(sql.contains("{{"), sql);
        assertFalse(sql.contains(" _work_queue_items"), "no dangling separator: " + sql);
        assertEquals("work_queue_items", WorkQueueMigrations.tableName(""));
    }

    @Test
    void aPrefixIsJoinedWithAnUnderscoreEverywhere() {
        String sql = WorkQueueMigrations.sql("ddb");
        assertEquals(List.of("ddb_work_queue_items", "ddb_work_queue_items_due_idx", "ddb_work_queue_items_reap_idx",
                "ddb_work_queue_queues"), createdNames(sql));
        // Every mention of the table carries the prefix, the ON clauses included.
        assertFalse(Pattern.compile("(?<!ddb_)work_queue_items").matcher(sql.replaceAll("--[^\n]*", "")).find(), sql);
        assertEquals(2, countMatches(sql, "ON ddb_work_queue_items "));
        assertEquals("ddb_work_queue_items", WorkQueueMigrations.tableName("ddb"));
    }

    @Test
    void statementsAreTheTenExecutableStatementsWithoutComments() {
        List<String> statements = WorkQueueMigrations.statements("ddb");
        assertEquals(10, statements.size(), statements::toString);
        assertTrue(statements.get(0).startsWith("CREATE TABLE IF NOT EXISTS ddb_work_queue_items ("), statements.get(0));
        assertTrue(statements.get(1).startsWith("CREATE INDEX IF NOT EXISTS ddb_work_queue_items_due_idx"), statements.get(1));
        assertTrue(statements.get(2).startsWith("CREATE INDEX IF NOT EXISTS ddb_work_queue_items_reap_idx"), statements.get(2));
        assertEquals("ALTER TABLE ddb_work_queue_items ADD COLUMN IF NOT EXISTS requested_at TIMESTAMPTZ", statements.get(3));
        assertTrue(statements.get(4).startsWith("CREATE TABLE IF NOT EXISTS ddb_work_queue_queues ("), statements.get(4));
        assertEquals("ALTER TABLE ddb_work_queue_items ADD COLUMN IF NOT EXISTS claimed_at TIMESTAMPTZ", statements.get(5));
        assertEquals("ALTER TABLE ddb_work_queue_queues ADD COLUMN IF NOT EXISTS paused_at TIMESTAMPTZ", statements.get(6));
        assertEquals("ALTER TABLE ddb_work_queue_items ADD COLUMN IF NOT EXISTS trace_contexts TEXT[]", statements.get(7));
        assertEquals("ALTER TABLE ddb_work_queue_queues ADD COLUMN IF NOT EXISTS longest_lease_us BIGINT", statements.get(8));
        assertEquals("COMMENT ON TABLE ddb_work_queue_items IS 'reactive-workqueue schema "
                + WorkQueueMigrations.SCHEMA_VERSION + "'", statements.get(9));
        for (String statement : statements) {
            assertFalse(statement.contains("--"), statement);
            assertFalse(statement.contains(";"), "one statement each, no terminator: " + statement);
            assertFalse(statement.isBlank());
            assertFalse(statement.contains("\n\n"), "blank lines removed: " + statement);
            assertEquals(statement.strip(), statement);
        }
    }

    @Test
    void theStatementsAreTheSqlWithoutItsComments() {
        String flattened = WorkQueueMigrations.sql("ddb").lines()
                .map(line -> line.replaceAll("--.*", "").strip())
                .filter(line -> !line.isEmpty())
                .reduce("", (a, b) -> a + b + "\n");
        assertEquals(flattened, String.join(";\n", WorkQueueMigrations.statements("ddb")) + ";\n");
    }

    @Test
    void everyStatementIsIfNotExistsOrIdempotent() {
        for (String statement : WorkQueueMigrations.statements("")) {
            assertTrue(statement.startsWith("CREATE TABLE IF NOT EXISTS ") || statement.startsWith("CREATE INDEX IF NOT EXISTS ")
                            || statement.startsWith("ALTER TABLE work_queue_items ADD COLUMN IF NOT EXISTS ")
                            || statement.startsWith("ALTER TABLE work_queue_queues ADD COLUMN IF NOT EXISTS ")
                            || statement.startsWith("COMMENT ON TABLE "),
                    statement);
        }
        String sql = WorkQueueMigrations.sql("");
        assertEquals(countMatches(sql, "CREATE ") + countMatches(sql, "ADD COLUMN "), countMatches(sql, "IF NOT EXISTS"));
    }

    @Test
    void theKeyColumnsAreBytewiseCollated() {
        String table = WorkQueueMigrations.statements("").get(0);
        assertTrue(Pattern.compile("queue_name\\s+TEXT\\s+COLLATE \"C\"\\s+NOT NULL").matcher(table).find(), table);
        assertTrue(Pattern.compile("item_key\\s+TEXT\\s+COLLATE \"C\"\\s+NOT NULL").matcher(table).find(), table);
        assertTrue(table.contains("PRIMARY KEY (queue_name, item_key)"), table);
    }

    @Test
    void theIndexesArePartialOnCompletion() {
        List<String> statements = WorkQueueMigrations.statements("");
        assertTrue(statements.get(1).contains("(queue_name, priority DESC, available_at, item_key)"), statements.get(1));
        assertTrue(statements.get(1).endsWith("WHERE completed_at IS NULL"), statements.get(1));
        assertTrue(statements.get(2).contains("(queue_name, completed_at)"), statements.get(2));
        assertTrue(statements.get(2).endsWith("WHERE completed_at IS NOT NULL"), statements.get(2));
    }

    @Test
    void theLongestAcceptedPrefixKeepsEveryNameWithin63Bytes() {
        String prefix = "p".repeat(37);
        for (String name : createdNames(WorkQueueMigrations.sql(prefix))) {
            assertTrue(name.length() <= 63, name);
        }
        assertEquals(63, (prefix + "_work_queue_items_reap_idx").length());
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "a", "ddb", "_", "t1_abc", "ppppppppppppppppppppppppppppppppppppp"})
    void validatePrefixAcceptsPlainLowerCaseIdentifiersThatFit(String prefix) {
        assertDoesNotThrow(() -> WorkQueueMigrations.validatePrefix(prefix));
    }

    @ParameterizedTest
    @ValueSource(strings = {"x; DROP TABLE y", "a\"b", "A", "1abc", "a b", "a-b", "a.b", "x/*", "p\u00e9",
            "pppppppppppppppppppppppppppppppppppppp"}) // the last: 38 bytes, one too many
    void validatePrefixRefusesAnythingElse(String prefix) {
        InvalidConfigException e = assertThrows(InvalidConfigException.class, () -> WorkQueueMigrations.validatePrefix(prefix));
        assertTrue(e.getMessage().contains("tablePrefix"), e.getMessage());
    }

    @Test
    void validatePrefixRefusesNull() {
        assertThrows(InvalidConfigException.class, () -> WorkQueueMigrations.validatePrefix(null));
    }

    @Test
    void renderingWithABadPrefixThrowsBeforeAnySqlIsProduced() {
        assertThrows(InvalidConfigException.class, () -> WorkQueueMigrations.sql("x; DROP TABLE y"));
        assertThrows(InvalidConfigException.class, () -> WorkQueueMigrations.statements("A"));
        assertThrows(InvalidConfigException.class, () -> WorkQueueMigrations.tableName("1abc"));
    }

    private static List<String> createdNames(String sql) {
        Matcher m = CREATED.matcher(sql);
        List<String> names = new java.util.ArrayList<>();
        while (m.find()) {
            names.add(m.group(1));
        }
        return names;
    }

    private static int countMatches(String text, String fragment) {
        int count = 0;
        for (int i = text.indexOf(fragment); i >= 0; i = text.indexOf(fragment, i + 1)) {
            count++;
        }
        return count;
    }

    @Test
    void theVersionedScriptsAreRenderedForThePrefixAndNumberedFromOne() {
        String v1 = WorkQueueMigrations.versionedScript(1, "ddb");
        String v2 = WorkQueueMigrations.versionedScript(2, "ddb");
        assertTrue(v1.contains("CREATE TABLE IF NOT EXISTS ddb_work_queue_items ("), v1);
        assertFalse(v1.contains("requested_at"), "version 1 is the first release's table");
        assertTrue(v2.contains("ALTER TABLE ddb_work_queue_items ADD COLUMN IF NOT EXISTS requested_at"), v2);
        assertFalse(v1.contains("{{prefix}}") || v2.contains("{{prefix}}"));
        assertThrows(InvalidConfigException.class, () -> WorkQueueMigrations.versionedScript(0, "ddb"));
        assertThrows(InvalidConfigException.class,
                () -> WorkQueueMigrations.versionedScript(WorkQueueMigrations.SCHEMA_VERSION + 1, "ddb"));
        assertThrows(InvalidConfigException.class, () -> WorkQueueMigrations.versionedScript(1, "Bad"));
    }
}
