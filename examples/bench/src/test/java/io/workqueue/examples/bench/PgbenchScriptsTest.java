package io.workqueue.examples.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The pgbench baselines are only a fair comparison while they run the library's own statements:
 * the harness checks that on every run, and this test checks it on every build, so a change to the
 * library's SQL cannot leave the scripts behind until someone next runs the benchmark.
 */
class PgbenchScriptsTest {
    @Test
    void theScriptsRunTheLibrarysCurrentStatements() {
        List<String> problems = new Pgbench(Path.of("pgbench"), null).checkScripts();
        assertEquals(List.of(), problems, () -> String.join("\n", problems));
    }
}
