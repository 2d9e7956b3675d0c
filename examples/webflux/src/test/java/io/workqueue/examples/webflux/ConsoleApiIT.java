package io.workqueue.examples.webflux;

import static org.assertj.core.api.Assertions.assertThat;

import io.workqueue.KeyCodec;
import io.workqueue.ReactiveWorkQueue;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.boot.webtestclient.autoconfigure.AutoConfigureWebTestClient;
import org.springframework.core.ParameterizedTypeReference;
import org.springframework.http.MediaType;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.web.reactive.server.WebTestClient;

/**
 * The console's HTTP surface without a browser: the page's security headers, the JSON API, and
 * each condition an action must meet (JSON, same origin, the token), one refused at a time; and
 * the line that says at startup where the console is.
 */
@SpringBootTest(webEnvironment = WebEnvironment.RANDOM_PORT, properties = {
        "workqueue.queues.tiles.name=tiles-api-${random.uuid}",
        "workqueue.queues.tiles.worker.enabled=false",
        "workqueue.console.enabled=true",
        "workqueue.console.actions-enabled=true"})
@AutoConfigureWebTestClient
@DirtiesContext
@ExtendWith(OutputCaptureExtension.class)
class ConsoleApiIT {
    static final Duration WAIT = Duration.ofSeconds(30);

    @Autowired
    WebTestClient client;

    @Autowired
    ReactiveWorkQueue<TileKey> tiles;

    @LocalServerPort
    int port;

    @Test
    void thePageIsServedUnderAStrictContentSecurityPolicyWithItsToken() {
        var page = client.get().uri("/workqueue/").exchange()
                .expectStatus().isOk()
                .expectHeader().valueEquals("Content-Security-Policy", "default-src 'none'; script-src 'self';"
                        + " style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none';"
                        + " frame-ancestors 'none'")
                .expectHeader().valueEquals("X-Content-Type-Options", "nosniff")
                .expectBody(String.class).returnResult().getResponseBody();
        assertThat(page).doesNotContain("{{").contains("<script src=\"console.js\" defer></script>");
        client.get().uri("/workqueue").exchange().expectStatus().isPermanentRedirect();
        client.get().uri("/workqueue/console.js").exchange().expectStatus().isOk()
                .expectHeader().contentTypeCompatibleWith("text/javascript");
        assertThat(page).contains("<link rel=\"icon\" href=\"favicon.svg\"");
        client.get().uri("/workqueue/favicon.svg").exchange().expectStatus().isOk()
                .expectHeader().contentTypeCompatibleWith("image/svg+xml")
                .expectBody(String.class).value(icon -> assertThat(icon).startsWith("<svg"));
    }

    @Test
    void theConsoleSaysAtStartupWhereItIs(CapturedOutput output) {
        assertThat(output.getAll()).containsOnlyOnce("Work queue console at ")
                .contains("Work queue console at http://localhost:" + port + "/workqueue/ (actions enabled)");
    }

    @Test
    void keysAndErrorsComeBackVerbatimHiddenCharactersAndAll() {
        String key = "invoice\u202Efdp.exe\u200B\uFEFF<b>";
        String error = "failed on invoice\u202Efdp.exe\u2066\u0007";
        // The tiles queue takes records, stored as the codec's JSON; the text rides in the layer.
        TileKey tile = new TileKey(key, 0, 0);
        tiles.enqueueKeys(tile).block(WAIT);
        tiles.release(Duration.ofHours(1), new IllegalStateException(error), tile).block(WAIT);
        String stored = KeyCodec.defaultFor(TileKey.class).encode(tile);
        Map<String, Object> item = getJson("/workqueue/api/item?table=webflux_demo&queue={q}&key={k}", tiles.name(), stored);
        assertThat(item).containsEntry("storedKey", stored).containsEntry("lastError", error);
        assertThat((String) item.get("key")).contains(key);
    }

    @Test
    void anActionNeedsJsonTheSameOriginAndTheToken() {
        TileKey tile = new TileKey("api", 1, 1);
        tiles.enqueueKeys(tile).block(WAIT);
        tiles.release(Duration.ofHours(1), null, tile).block(WAIT);
        String key = KeyCodec.defaultFor(TileKey.class).encode(tile);
        String token = token();
        String origin = "http://localhost:" + port;
        Map<String, Object> body = Map.of("table", "webflux_demo", "queue", tiles.name(), "keys", List.of(key));

        refused(client.post().uri("/workqueue/api/retry").contentType(MediaType.APPLICATION_JSON)
                .header("Origin", origin).bodyValue(body), "token");
        refused(client.post().uri("/workqueue/api/retry").contentType(MediaType.APPLICATION_JSON)
                .header("Origin", origin).header("X-Workqueue-Console-Token", token + "x").bodyValue(body), "token");
        refused(client.post().uri("/workqueue/api/retry").contentType(MediaType.APPLICATION_JSON)
                .header("Origin", "http://evil.example").header("X-Workqueue-Console-Token", token).bodyValue(body),
                "cross-origin");
        refused(client.post().uri("/workqueue/api/retry").contentType(MediaType.APPLICATION_JSON)
                .header("Sec-Fetch-Site", "cross-site").header("X-Workqueue-Console-Token", token).bodyValue(body),
                "cross-site");
        refused(client.post().uri("/workqueue/api/retry").contentType(MediaType.TEXT_PLAIN)
                .header("Origin", origin).header("X-Workqueue-Console-Token", token).bodyValue("{}"), "JSON");
        assertThat(states(key)).containsExactly("delayed");
        client.get().uri("/workqueue/api/retry").exchange().expectStatus().value(s -> assertThat(s).isIn(404, 405));

        Map<String, Object> retried = client.post().uri("/workqueue/api/retry").contentType(MediaType.APPLICATION_JSON)
                .header("Origin", origin).header("X-Workqueue-Console-Token", token).bodyValue(body)
                .exchange().expectStatus().isOk()
                .expectBody(new ParameterizedTypeReference<Map<String, Object>>() {}).returnResult().getResponseBody();
        assertThat(retried).containsEntry("changed", List.of(key));
        assertThat(states(key)).containsExactly("ready");
    }

    @Test
    void theApiListsQueuesItemsAndDetailsAndAnswersBadRequestsPlainly() {
        tiles.enqueueKeys(new TileKey("list", 0, 0)).block(WAIT);
        Map<String, Object> queues = getJson("/workqueue/api/queues");
        assertThat(queues).containsEntry("actionsEnabled", true);
        assertThat((List<?>) queues.get("queues")).anySatisfy(q -> assertThat(asMap(q))
                .containsEntry("queue", tiles.name()).containsEntry("table", "webflux_demo").containsKeys("depth",
                        "ready", "leased", "stalled", "completed", "completedCapped", "oldestReadyAgeMillis", "statsAgeMillis"));
        Map<String, Object> page = getJson("/workqueue/api/items?table=webflux_demo&queue={q}&state=ready&limit=5", tiles.name());
        assertThat((List<?>) page.get("items")).isNotEmpty();
        client.get().uri("/workqueue/api/items?table=webflux_demo&queue={q}&state=bogus", tiles.name()).exchange()
                .expectStatus().isBadRequest().expectBody(String.class).returnResult();
        client.get().uri("/workqueue/api/items?table=webflux_demo&queue={q}&limit=100000", tiles.name()).exchange()
                .expectStatus().isBadRequest().expectBody(String.class).returnResult();
        client.get().uri("/workqueue/api/items?table=webflux_demo&queue={q}&after=forged", tiles.name()).exchange()
                .expectStatus().isBadRequest().expectBody(String.class).returnResult();
        client.get().uri("/workqueue/api/items?table=nosuchtable&queue={q}", tiles.name()).exchange()
                .expectStatus().isNotFound().expectBody(String.class).returnResult();
        client.get().uri("/workqueue/api/item?table=webflux_demo&queue={q}&key=missing", tiles.name()).exchange()
                .expectStatus().isNotFound().expectBody(String.class).returnResult();
    }

    /** The states the console's API gives the item stored as {@code key}. */
    @SuppressWarnings("unchecked")
    private List<String> states(String key) {
        return (List<String>) getJson("/workqueue/api/item?table=webflux_demo&queue={q}&key={k}", tiles.name(), key).get("states");
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> asMap(Object json) {
        return (Map<String, Object>) json;
    }

    private Map<String, Object> getJson(String uri, Object... variables) {
        return client.get().uri(uri, variables).exchange().expectStatus().isOk()
                .expectBody(new ParameterizedTypeReference<Map<String, Object>>() {}).returnResult().getResponseBody();
    }

    private static void refused(WebTestClient.RequestHeadersSpec<?> request, String why) {
        String error = Objects.requireNonNull(request.exchange().expectStatus().isForbidden()
                .expectBody(new ParameterizedTypeReference<Map<String, Object>>() {}).returnResult().getResponseBody())
                .get("error").toString();
        assertThat(error).contains(why);
    }

    private String token() {
        String page = client.get().uri("/workqueue/").exchange().expectBody(String.class).returnResult().getResponseBody();
        Matcher matcher = Pattern.compile("name=\"workqueue-token\" content=\"([^\"]+)\"").matcher(Objects.requireNonNull(page));
        assertThat(matcher.find()).isTrue();
        return matcher.group(1);
    }
}
