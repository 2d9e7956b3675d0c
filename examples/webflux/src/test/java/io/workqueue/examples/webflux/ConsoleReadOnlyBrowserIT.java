package io.workqueue.examples.webflux;

import static org.assertj.core.api.Assertions.assertThat;

import io.workqueue.KeyCodec;
import io.workqueue.ReactiveWorkQueue;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.support.ui.WebDriverWait;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.annotation.DirtiesContext;

/**
 * The console with {@code workqueue.console.actions-enabled=false}: it shows everything and offers
 * no action, and the server refuses one even when the page's own script sends it, token and all.
 */
@SpringBootTest(webEnvironment = WebEnvironment.RANDOM_PORT, properties = {
        "workqueue.queues.tiles.name=tiles-readonly-${random.uuid}",
        "workqueue.queues.tiles.worker.enabled=false",
        "workqueue.console.enabled=true",
        "workqueue.console.actions-enabled=false"})
@DirtiesContext
class ConsoleReadOnlyBrowserIT {
    static final Duration WAIT = Duration.ofSeconds(30);
    static ChromeDriver driver;

    @LocalServerPort
    int port;

    @Autowired
    ReactiveWorkQueue<TileKey> tiles;

    @BeforeAll
    static void startBrowser() {
        driver = Browser.start();
    }

    @AfterAll
    static void stopBrowser() {
        if (driver != null) {
            driver.quit();
        }
    }

    @Test
    void aReadOnlyConsoleOffersNoActionAndTheServerRefusesOne() {
        TileKey tile = new TileKey("roads", 7, 7);
        tiles.enqueueKeys(tile).block(WAIT);
        tiles.release(Duration.ofHours(1), new IllegalStateException("later"), tile).block(WAIT);
        String key = KeyCodec.defaultFor(TileKey.class).encode(tile);
        String base = "http://127.0.0.1:" + port + "/workqueue/";

        String delayed = base + "#/queue?table=webflux_demo&queue=" + ConsoleBrowserIT.encode(tiles.name()) + "&state=delayed";
        driver = Browser.open(driver, delayed);
        new WebDriverWait(driver, WAIT).until(d -> "queue".equals(driver.executeScript("return document.body.dataset.loaded")));
        assertThat(driver.findElements(By.cssSelector("#items tr.item"))).hasSize(1);
        assertThat(driver.findElements(By.tagName("button"))).isEmpty();
        assertThat(driver.findElement(By.id("mode")).getText()).isEqualTo("read-only");

        @SuppressWarnings("unchecked")
        Map<String, Object> answer = (Map<String, Object>) driver.executeAsyncScript("""
                const [body, done] = arguments;
                const headers = {'Content-Type': 'application/json'};
                headers[document.querySelector('meta[name="workqueue-token-header"]').content] =
                    document.querySelector('meta[name="workqueue-token"]').content;
                fetch('api/retry', {method: 'POST', headers, body})
                  .then(r => r.json().then(json => done({status: r.status, error: json.error})))
                  .catch(e => done({status: -1, error: String(e)}));""",
                "{\"table\":\"webflux_demo\",\"queue\":" + ConsoleBrowserIT.json(tiles.name()) + ",\"keys\":["
                        + ConsoleBrowserIT.json(key) + "]}");

        assertThat(answer).containsEntry("status", 403L);
        assertThat((String) answer.get("error")).contains("actions are disabled");
        assertThat(tiles.stats().block(WAIT).ready()).isZero();
    }
}
