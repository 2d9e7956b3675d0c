package io.workqueue;

import static org.junit.jupiter.api.Assertions.assertFalse;

import io.r2dbc.spi.Connection;
import io.workqueue.migrations.WorkQueueMigrations;
import io.workqueue.testing.TestDatabase;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Every SQL block of the README runs, as written, against a real server: inside one transaction
 * that first creates the default table (the README's statements name it), and is then rolled back,
 * so nothing is left behind and nothing the test database holds is touched. The SQL blocks of the
 * pages in {@code docs/} run the same way.
 */
class ReadmeSqlIT {
    private static final Duration WAIT = Duration.ofSeconds(30);

    /**
     * The README's and the docs' blocks, together: the README sends readers to docs/ for the SQL
     * it used to show (the autovacuum settings), and a block moved between them stays checked.
     */
    @Test
    void everySqlBlockOfTheReadmeAndTheDocsRunsAsWritten() throws IOException {
        List<Path> docs = ReadmeSnippetsTest.docs();
        assertFalse(docs.isEmpty(), "docs/ has Markdown pages");
        List<String> blocks = new ArrayList<>();
        ReadmeSnippetsTest.blocks().stream()
                .filter(block -> block.language().equals("sql"))
                .map(ReadmeSnippetsTest.Block::text)
                .forEach(blocks::add);
        for (Path doc : docs) {
            ReadmeSnippetsTest.blocks(doc).stream()
                    .filter(block -> block.language().equals("sql"))
                    .map(ReadmeSnippetsTest.Block::text)
                    .forEach(blocks::add);
        }
        assertFalse(blocks.isEmpty(), "the README and docs/ have SQL blocks");
        runInRolledBackTransaction("an SQL block of the README or docs/", blocks);
    }

    private static void runInRolledBackTransaction(String what, List<String> blocks) {
        List<String> statements = new ArrayList<>(WorkQueueMigrations.statements(""));
        statements.addAll(blocks);
        Mono.usingWhen(TestDatabase.plain().create(),
                        connection -> Mono.from(connection.beginTransaction())
                                .thenMany(Flux.fromIterable(statements))
                                .concatMap(sql -> run(connection, sql, what))
                                .then(Mono.from(connection.rollbackTransaction())),
                        Connection::close)
                .block(WAIT);
    }

    private static Mono<Long> run(Connection connection, String sql, String what) {
        return Flux.from(connection.createStatement(sql).execute())
                .concatMap(result -> result.getRowsUpdated())
                .reduce(0L, Long::sum)
                .onErrorMap(e -> new AssertionError(what + " fails: " + e.getMessage() + "\n" + sql, e));
    }
}
