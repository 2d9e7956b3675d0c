package io.workqueue.examples.webflux;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.workqueue.ReactiveWorkQueue;
import io.workqueue.examples.webflux.TileController.QueueStats;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import org.assertj.core.api.InstanceOfAssertFactories;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.webtestclient.autoconfigure.AutoConfigureWebTestClient;
import org.springframework.core.ParameterizedTypeReference;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.web.reactive.server.WebTestClient;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Schedulers;

/**
 * The service end to end, over HTTP on a real port, against a real PostgreSQL (the one at
 * {@code WORKQUEUE_R2DBC_URL}, or an embedded one). A queue name of its own keeps it apart from
 * anything else on the server. The methods run in order, the first filling the queue the others
 * look at. {@link TileServiceShutdownIT} closes a context of its own.
 */
@SpringBootTest(webEnvironment = WebEnvironment.RANDOM_PORT,
        properties = "workqueue.queues.tiles.name=tiles-it-${random.uuid}")
@AutoConfigureWebTestClient
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@DirtiesContext // close the context, and stop any embedded server, once this class is done
class TileServiceIT {
    private static final int TILES = 200;

    @Autowired
    WebTestClient client;

    @Autowired
    ReactiveWorkQueue<TileKey> queue;

    @Test
    @Order(1)
    void everyAcceptedTileIsRenderedAndCompleted() {
        postConcurrently(client, "roads", TILES);

        await().atMost(Duration.ofSeconds(60))
                .pollInterval(Duration.ofMillis(100))
                .until(() -> stats().pending() == 0);

        QueueStats stats = stats();
        assertThat(stats).isEqualTo(new QueueStats(queue.name(), 0, 0, 0, 0, TILES, "PT0S"));
    }

    @Test
    @Order(2)
    void statsAreJsonWithAnIsoDurationAge() {
        Map<String, Object> json = client.get().uri("/queue/stats")
                .exchange()
                .expectStatus().isOk()
                .expectBody(new ParameterizedTypeReference<Map<String, Object>>() {})
                .returnResult()
                .getResponseBody();

        assertThat(json).containsOnlyKeys("queue", "pending", "ready", "leased", "stalled", "completed",
                "oldestReadyAge");
        assertThat(json.get("pending")).isInstanceOf(Number.class);
        assertThat(Duration.parse((String) json.get("oldestReadyAge"))).isGreaterThanOrEqualTo(Duration.ZERO);
    }

    @Test
    @Order(3)
    void aTileKeyTooLongForTheQueueIsABadRequest() {
        client.post().uri("/tiles/{layer}/{x}/{y}", "x".repeat(600), 1, 2)
                .exchange()
                .expectStatus().isBadRequest();
    }

    @Test
    @Order(4)
    void actuatorReportsTheQueuesHealthAndMeters() {
        Map<String, Object> health = client.get().uri("/actuator/health/workqueue/tiles")
                .exchange()
                .expectStatus().isOk()
                .expectBody(new ParameterizedTypeReference<Map<String, Object>>() {})
                .returnResult()
                .getResponseBody();
        assertThat(health).containsEntry("status", "UP");
        assertThat(health.get("details")).asInstanceOf(InstanceOfAssertFactories.MAP)
                .containsEntry("queue", queue.name())
                .containsKeys("maxOldestReadyAge");

        client.get().uri("/actuator/metrics/workqueue.completed?tag=queue:{name}", queue.name())
                .exchange()
                .expectStatus().isOk()
                .expectBody().jsonPath("$.measurements[0].value").isEqualTo((double) TILES);
    }

    /** POSTs {@code count} distinct tiles of {@code layer}, 32 requests at a time; each must be accepted. */
    static void postConcurrently(WebTestClient client, String layer, int count) {
        Flux.range(0, count)
                .parallel(32)
                .runOn(Schedulers.boundedElastic())
                .doOnNext(i -> client.post().uri("/tiles/{layer}/{x}/{y}", layer, i / 16, i % 16)
                        .exchange()
                        .expectStatus().isAccepted())
                .sequential()
                .blockLast(Duration.ofSeconds(60));
    }

    private QueueStats stats() {
        return Objects.requireNonNull(client.get().uri("/queue/stats")
                .exchange()
                .expectStatus().isOk()
                .expectBody(QueueStats.class)
                .returnResult()
                .getResponseBody());
    }
}
