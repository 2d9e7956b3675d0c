package io.workqueue.examples.bench;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The pgbench baselines run the library's own statements, made into scripts at each run: every one
 * of the library's parameters becomes a pgbench variable (a {@code $n} left over would make pgbench
 * send a statement the server cannot run), and each claim keeps its leased keys for the next
 * command. Checked without a server: pgbench itself runs in the benchmark.
 */
class PgbenchScriptsTest {
    private static final Pattern LEFTOVER_PARAMETER = Pattern.compile("\\$[0-9]");

    @Test
    void theScriptsAreTheLibrarysStatementsWithEveryParameterAVariable() {
        LibrarySql sql = LibrarySql.forPrefix(Pgbench.PREFIX);
        for (String script : new String[] {Pgbench.claimThenComplete(sql), Pgbench.completeAndClaim(sql)}) {
            String commands = script.lines().filter(line -> !line.startsWith("--")).reduce("", (a, b) -> a + b + "\n");
            assertFalse(LEFTOVER_PARAMETER.matcher(commands).find(), () -> "a parameter left unnamed:\n" + script);
            assertTrue(script.contains("SELECT coalesce(keys, '{}') AS keys FROM claimed\n\\gset\n"), script);
        }
        assertTrue(Pgbench.claimThenComplete(sql).contains(Pgbench.forPgbench(sql.completeKeys).strip()));
        assertTrue(Pgbench.completeAndClaim(sql).contains(
                Pgbench.forPgbench(sql.completeAndClaim).substring(0, 200)), "the statement is the library's");
    }
}
