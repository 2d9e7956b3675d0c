package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * {@code docs/sql/statements.sql} is every statement's final text, readable in one place; this
 * keeps it equal to what {@link Sql} renders. After changing a statement, regenerate it with
 * {@code mvn test -Dtest=StatementsReferenceTest -Dstatements.write=true}.
 */
class StatementsReferenceTest {
    private static final Path REFERENCE = Path.of("docs/sql/statements.sql");

    @Test
    void theReferenceIsWhatSqlRenders() throws IOException {
        String rendered = Sql.reference();
        if (Boolean.getBoolean("statements.write")) {
            Files.writeString(REFERENCE, rendered, StandardCharsets.UTF_8);
        }
        assertTrue(Files.exists(REFERENCE), REFERENCE + " is missing; write it with -Dstatements.write=true");
        assertEquals(rendered, Files.readString(REFERENCE, StandardCharsets.UTF_8),
                REFERENCE + " is out of date; regenerate it with -Dstatements.write=true");
    }

    @Test
    void everyStatementSentIsTheReferenceWithoutItsComments() {
        Sql sql = new Sql("", false);
        String reference = Sql.reference();
        for (SqlStatement statement : new SqlStatement[] {sql.claimDue, sql.claimFromCursors, sql.completeKeys, sql.completeAndClaim,
                sql.completeAndClaimFromCursors, sql.releaseKeys, sql.handBackKeys, sql.removeKeys, sql.reapCompleted,
                sql.statsCompleted, sql.stats, sql.enqueue, sql.enqueueInTransaction, sql.enqueueNotifying, Sql.HORIZON,
                Sql.NOTIFIER_TICK}) {
            String sent = statement.text();
            assertTrue(Sql.compact(reference).contains(sent.strip()), () -> "not in the reference:\n" + sent);
        }
    }
}
