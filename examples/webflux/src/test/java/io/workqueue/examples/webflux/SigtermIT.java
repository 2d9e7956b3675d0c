package io.workqueue.examples.webflux;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.workqueue.examples.support.DemoDatabase;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The service, run as a process of its own and sent SIGTERM (as {@code kill}, systemd or Kubernetes
 * stop it), shuts down in order and its JVM exits promptly. The exit is what an orchestrator waits
 * for: a JVM held after the shutdown has finished delays every restart and deploy. Reactor Netty's
 * shutdown quiet period would hold it for 2 s by default ({@code application.yml} sets it to zero).
 * The server is found in this JVM ({@code WORKQUEUE_R2DBC_URL}, else an embedded one started here),
 * so the service's exit does not include stopping an embedded PostgreSQL.
 */
class SigtermIT {
    private static final Duration STARTUP = Duration.ofSeconds(90);
    private static final Duration EXIT = Duration.ofSeconds(2);

    @Test
    void theServiceExitsWithinTwoSecondsOfSigtermAfterAnOrderlyShutdown() throws Exception {
        try (DemoDatabase database = DemoDatabase.start()) {
            Path log = Files.createTempFile("sigterm-it-service", ".log");
            ProcessBuilder builder = new ProcessBuilder(
                    Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-cp", System.getProperty("java.class.path"),
                    TileServiceApplication.class.getName(),
                    "--server.port=0",
                    "--workqueue.queues.tiles.name=tiles-sigterm-it-" + UUID.randomUUID())
                    .redirectErrorStream(true)
                    .redirectOutput(log.toFile());
            builder.environment().put(DemoDatabase.URL_VARIABLE, database.url());
            Process service = builder.start();
            try {
                await().atMost(STARTUP).pollInterval(Duration.ofMillis(100))
                        .until(() -> !service.isAlive() || output(log).contains("Started TileServiceApplication"));
                assertThat(service.isAlive()).as("the service started; its output:%n%s", output(log)).isTrue();

                long signalled = System.nanoTime();
                service.destroy(); // SIGTERM
                boolean exited = service.waitFor(30, TimeUnit.SECONDS);
                Duration exit = Duration.ofNanos(System.nanoTime() - signalled);
                System.out.println("[sigterm] the service's JVM exited " + exit.toMillis() + " ms after SIGTERM");

                String output = output(log);
                assertThat(exited).as("the service exited at all within 30 s of SIGTERM").isTrue();
                assertThat(output).as("the shutdown ran in order: workers settled, then the queues closed")
                        .contains("every worker stopped with its items settled", "work queues flushed and closed");
                assertThat(exit).as("time from SIGTERM to the JVM's exit; the service's output:%n%s", output)
                        .isLessThan(EXIT);
            } finally {
                service.destroyForcibly();
                Files.deleteIfExists(log);
            }
        }
    }

    private static String output(Path log) throws IOException {
        return Files.readString(log, StandardCharsets.UTF_8);
    }
}
