package io.workqueue;

import static org.junit.jupiter.api.Assertions.assertFalse;

import io.r2dbc.spi.Connection;
import io.workqueue.migrations.WorkQueueMigrations;
import io.workqueue.testing.TestDatabase;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Every SQL block of the README runs, as written, against a real server: inside one transaction
 * that first creates the default table (the README's statements name it), and is then rolled back,
 * so nothing is left behind and nothing the test database holds is touched.
 */
class ReadmeSqlIT {
    private static final Duration WAIT = Duration.ofSeconds(30);

    @Test
    void everySqlBlockOfTheReadmeRunsAsWritten() throws IOException {
        List<String> blocks = ReadmeSnippetsTest.blocks().stream()
                .filter(block -> block.language().equals("sql"))
                .map(ReadmeSnippetsTest.Block::text)
                .toList();
        assertFalse(blocks.isEmpty(), "the README has SQL blocks");
        List<String> statements = new ArrayList<>(WorkQueueMigrations.statements(""));
        statements.addAll(blocks);
        Mono.usingWhen(TestDatabase.plain().create(),
                        connection -> Mono.from(connection.beginTransaction())
                                .thenMany(Flux.fromIterable(statements))
                                .concatMap(sql -> run(connection, sql))
                                .then(Mono.from(connection.rollbackTransaction())),
                        Connection::close)
                .block(WAIT);
    }

    private static Mono<Long> run(Connection connection, String sql) {
        return Flux.from(connection.createStatement(sql).execute())
                .concatMap(result -> result.getRowsUpdated())
                .reduce(0L, Long::sum)
                .onErrorMap(e -> new AssertionError("a README SQL block fails: " + e.getMessage() + "\n" + sql, e));
    }
}
