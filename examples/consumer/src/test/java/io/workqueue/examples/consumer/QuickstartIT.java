package io.workqueue.examples.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.workqueue.testing.TestDatabase;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Runs the README's Quickstart as a user would: its own JVM, on the runtime classpath this project
 * gets from the library's published pom alone, {@code WORKQUEUE_R2DBC_URL} naming the server. The
 * server is the test suite's: {@code WORKQUEUE_TEST_R2DBC_URL} when set (as in CI), otherwise the
 * one {@link TestDatabase} starts (Testcontainers when Docker runs, else an embedded PostgreSQL),
 * so that {@code mvn -f examples/pom.xml verify} never skips it. The program must end by itself:
 * a thread it leaves running would keep its JVM alive past the deadline.
 */
class QuickstartIT {
    private static final long DEADLINE_SECONDS = 60;

    @Test
    void theReadmesQuickstartRunsToTheEndAndExitsByItself() throws Exception {
        String url = TestDatabase.url();
        String fromEnvironment = System.getenv(TestDatabase.URL_VARIABLE);
        System.out.println("[quickstart] runs against " + url + (fromEnvironment != null && !fromEnvironment.isBlank()
                ? " (from " + TestDatabase.URL_VARIABLE + ")"
                : " (started for this test: " + TestDatabase.URL_VARIABLE + " is not set)"));

        String classpath = System.getProperty("quickstart.classpath");
        assertTrue(classpath != null && !classpath.isBlank(), "the build passes the runtime classpath as quickstart.classpath");
        ProcessBuilder builder = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", classpath, Quickstart.class.getName())
                .redirectErrorStream(true);
        builder.environment().put("WORKQUEUE_R2DBC_URL", url);
        Process quickstart = builder.start();
        // Relayed line by line: the fork's own stdout is the build's channel, not the child's.
        Thread relay = new Thread(() -> relay(quickstart), "quickstart-output");
        relay.setDaemon(true);
        relay.start();
        try {
            assertTrue(quickstart.waitFor(DEADLINE_SECONDS, TimeUnit.SECONDS),
                    "the Quickstart ends by itself within " + DEADLINE_SECONDS + " s");
            relay.join(TimeUnit.SECONDS.toMillis(5));
            assertEquals(0, quickstart.exitValue(), "the Quickstart's exit status");
        } finally {
            quickstart.destroyForcibly();
        }
    }

    private static void relay(Process process) {
        try (BufferedReader lines = new BufferedReader(
                new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line = lines.readLine(); line != null; line = lines.readLine()) {
                System.out.println("[quickstart] " + line);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
