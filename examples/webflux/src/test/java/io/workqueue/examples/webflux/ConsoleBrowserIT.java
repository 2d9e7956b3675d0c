package io.workqueue.examples.webflux;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactory;
import io.workqueue.KeyCodec;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.migrations.WorkQueueMigrations;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.openqa.selenium.By;
import org.openqa.selenium.NoAlertPresentException;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.support.ui.WebDriverWait;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.annotation.DirtiesContext;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The console in a real browser (Debian's headless Chromium, through Selenium) against the running
 * service and a real PostgreSQL: the queue list, drilling into stalled items, retrying one and
 * watching the service's worker complete it, keys, names and errors crafted to inject markup
 * rendered as inert text, and actions refused from another origin.
 */
@SpringBootTest(webEnvironment = WebEnvironment.RANDOM_PORT, properties = {
        "workqueue.queues.tiles.name=tiles-console-${random.uuid}",
        "tiles.failure-rate=0",
        "workqueue.console.enabled=true",
        "workqueue.console.actions-enabled=true",
        "workqueue.console.stats-max-age=100ms",
        "workqueue.queues.hostile.key-type=java.lang.String",
        "workqueue.queues.hostile.name=<svg/onload=window.__pwned='name'> \"hostile\" ${random.uuid}",
        "workqueue.queues.hostile.worker.enabled=false"})
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@DirtiesContext
class ConsoleBrowserIT {
    static final Duration WAIT = Duration.ofSeconds(30);
    static final String TABLE = WorkQueueMigrations.tableName("webflux_demo");
    /** Each would run script, inject an element or navigate if it were ever parsed as markup. */
    static final List<String> HOSTILE_KEYS = List.of(
            "<img src=x onerror=\"window.__pwned='img'\">",
            "\"><script>window.__pwned='script'</script>",
            "<svg/onload=window.__pwned='svg'>",
            "</td></tr></table><iframe srcdoc=\"<script>parent.__pwned='iframe'</script>\"></iframe>",
            "javascript:window.__pwned='href'",
            "' onmouseover='window.__pwned=\"attribute\"' x='",
            "{{constructor.constructor('window.__pwned=1')()}}",
            "&lt;b&gt;already escaped&lt;/b&gt;",
            "\u202Egnp.exe",
            "emoji \uD83E\uDDE8 and tab\there");
    static final String HOSTILE_ERROR = "<img src=x onerror=\"window.__pwned='error'\">";

    static ChromeDriver driver;

    @LocalServerPort
    int port;

    @Autowired
    ReactiveWorkQueue<TileKey> tiles;

    @Autowired
    @Qualifier("hostile")
    ReactiveWorkQueue<String> hostile;

    @Autowired
    ConnectionFactory database;

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

    /** Opens {@code url}, in a fresh browser if the first try times out (see {@link Browser#navigate}). */
    static void open(String url) {
        driver = Browser.open(driver, url);
    }

    /** Follows a link of the page (see {@link Browser#navigate}; a fresh browser opens its target). */
    static void follow(WebElement link) {
        String url = (String) driver.executeScript("return arguments[0].href", link);
        driver = Browser.navigate(driver, d -> link.click(), url);
    }

    /** Reloads the page (see {@link Browser#navigate}). */
    static void reload() {
        String url = driver.getCurrentUrl();
        driver = Browser.navigate(driver, d -> d.navigate().refresh(), url);
    }

    String console() {
        return "http://127.0.0.1:" + port + "/workqueue/";
    }

    /** Waits until the page has rendered the view {@code name} ("queues", "queue", "item"). */
    static void loaded(String name) {
        new WebDriverWait(driver, WAIT).until(d -> name.equals(driver.executeScript("return document.body.dataset.loaded")));
    }

    /** Stalled tiles: out of attempts (max-attempts 10), each with the error its last run left. */
    void stalledTiles(int count) {
        KeyCodec<TileKey> codec = KeyCodec.defaultFor(TileKey.class);
        Mono.usingWhen(database.create(), (Connection c) -> Flux.range(0, count)
                        .concatMap(i -> Flux.from(c.createStatement("INSERT INTO " + TABLE
                                        + " (queue_name, item_key, attempts, last_error, available_at)"
                                        + " VALUES ($1, $2, 10, $3, now() - $4 * INTERVAL '1 second')")
                                .bind(0, tiles.name())
                                .bind(1, codec.encode(new TileKey("stalled", i, 0)))
                                .bind(2, "renderer ran out of memory on tile " + i)
                                .bind(3, 60 - i)
                                .execute()).concatMap(r -> r.getRowsUpdated()))
                        .then(), Connection::close)
                .block(WAIT);
    }

    @Test
    @Order(1)
    void theQueueListShowsEveryQueueWithItsStats() {
        stalledTiles(3);
        tiles.enqueueKeys(new TileKey("roads", 1, 1), new TileKey("roads", 1, 2)).block(WAIT);

        open(console());
        loaded("queues");
        await().atMost(WAIT).until(() -> {
            reload();
            loaded("queues");
            return "3".equals(cell(tiles.name(), 5)) && "2".equals(cell(tiles.name(), 6));
        });

        assertThat(cell(tiles.name(), 1)).isEqualTo("webflux_demo");
        assertThat(cell(hostile.name(), 0)).isEqualTo(hostile.name());
        assertThat(driver.findElement(By.id("mode")).getText()).isEqualTo("actions enabled");
        Browser.screenshot(driver, "queues");
    }

    /** The text of column {@code column} of the queue list's row for {@code queue}, exactly. */
    static String cell(String queue, int column) {
        return (String) driver.executeScript("""
                const row = [...document.querySelectorAll('#queues tr.queue')].find(r => r.dataset.queue === arguments[0]);
                return row ? row.cells[arguments[1]].textContent : null;""", queue, column);
    }

    @Test
    @Order(2)
    void drillIntoTheStalledItemsRetryOneAndSeeTheWorkerCompleteIt() {
        open(console());
        loaded("queues");
        WebElement stalledLink = (WebElement) driver.executeScript("""
                const row = [...document.querySelectorAll('#queues tr.queue')].find(r => r.dataset.queue === arguments[0]);
                return row.cells[5].querySelector('a');""", tiles.name());
        follow(stalledLink);
        loaded("queue");

        List<WebElement> rows = driver.findElements(By.cssSelector("#items tr.item"));
        assertThat(rows).hasSize(3);
        assertThat(driver.findElement(By.cssSelector("#states a.current")).getText()).isEqualTo("stalled");
        assertThat(rows.get(0).getText()).contains("TileKey[layer=stalled, x=0, y=0]", "renderer ran out of memory on tile 0");
        Browser.screenshot(driver, "stalled");

        String retried = rows.get(0).getDomAttribute("data-key");
        rows.get(0).findElement(By.cssSelector("button.retry")).click();
        loaded("queue");
        await().atMost(WAIT).until(() -> driver.findElement(By.id("message")).getText().startsWith("Retried"));

        open(console() + "#/item?table=webflux_demo&queue=" + encode(tiles.name()) + "&key=" + encode(retried));
        loaded("item");
        await().atMost(WAIT).until(() -> {
            reload();
            loaded("item");
            return driver.findElement(By.id("item-states")).getText().equals("completed");
        });
        assertThat(driver.findElement(By.id("item-stored-key")).getText()).isEqualTo(retried);
        assertThat(driver.findElement(By.id("item-error")).getText()).isEqualTo("—");
        Browser.screenshot(driver, "item");
        open(console() + "#/queue?table=webflux_demo&queue=" + encode(tiles.name()) + "&state=stalled");
        loaded("queue");
        assertThat(driver.findElements(By.cssSelector("#items tr.item"))).hasSize(2);
    }

    @Test
    @Order(3)
    void hostileKeysNamesAndErrorsShowLiterallyAndRunNothing() {
        hostile.enqueueKeys(HOSTILE_KEYS).block(WAIT);
        hostile.release(Duration.ZERO, new IllegalStateException(HOSTILE_ERROR), HOSTILE_KEYS.get(0)).block(WAIT);

        open(console());
        loaded("queues");
        WebElement queueLink = (WebElement) driver.executeScript("""
                const row = [...document.querySelectorAll('#queues tr.queue')].find(r => r.dataset.queue === arguments[0]);
                return row.cells[0].querySelector('a');""", hostile.name());
        follow(queueLink);
        loaded("queue");

        @SuppressWarnings("unchecked")
        List<String> shown = (List<String>) driver.executeScript(
                "return [...document.querySelectorAll('#items tr.item td.key a')].map(a => a.textContent);");
        assertThat(shown).containsExactlyInAnyOrderElementsOf(HOSTILE_KEYS);
        assertThat(driver.executeScript("return document.querySelector('h1').textContent")).isEqualTo(hostile.name());
        assertThat(driver.executeScript("return [...document.querySelectorAll('#items td.error')].map(e => e.textContent)"))
                .asList().contains(HOSTILE_ERROR);
        assertInert();
        Browser.screenshot(driver, "hostile");

        // Each key's detail page, reached by its link.
        for (int i = 0; i < HOSTILE_KEYS.size(); i++) {
            String queuePage = driver.getCurrentUrl();
            WebElement link = driver.findElements(By.cssSelector("#items tr.item td.key a")).get(i);
            String key = link.getDomProperty("textContent");
            follow(link);
            loaded("item");
            assertThat(driver.executeScript("return document.getElementById('item-stored-key').textContent")).isEqualTo(key);
            assertInert();
            driver = Browser.navigate(driver, d -> d.navigate().back(), queuePage);
            loaded("queue");
        }
    }

    /** No dialog opened, no payload ran, and no element the data could have smuggled in exists. */
    static void assertInert() {
        try {
            String text = driver.switchTo().alert().getText();
            throw new AssertionError("a dialog opened: " + text);
        } catch (NoAlertPresentException expected) {
            // nothing opened
        }
        assertThat(driver.executeScript("return window.__pwned === undefined")).isEqualTo(true);
        assertThat(driver.executeScript(
                "return document.querySelectorAll('img, svg, iframe, script:not([src]), textarea, object, embed').length"))
                .isEqualTo(0L);
    }

    @Test
    @Order(4)
    void anotherOriginCannotActEvenWithTheBrowsersCookiesAndAForm() {
        String stalledKey = KeyCodec.defaultFor(TileKey.class).encode(new TileKey("stalled", 1, 0));
        String target = "http://127.0.0.1:" + port + "/workqueue/api/retry";
        String body = "{\"table\":\"webflux_demo\",\"queue\":" + json(tiles.name()) + ",\"keys\":[" + json(stalledKey) + "]}";

        // Another origin: the same server under another host name.
        open("http://localhost:" + port + "/queue/stats");
        @SuppressWarnings("unchecked")
        Map<String, Object> outcome = (Map<String, Object>) driver.executeAsyncScript("""
                const [target, body, done] = arguments;
                const result = {};
                // A "simple" request needs no preflight: it reaches the server, which must refuse it.
                fetch(target, {method: 'POST', mode: 'no-cors', headers: {'Content-Type': 'text/plain'}, body})
                  .then(r => { result.simple = r.type; })
                  .catch(e => { result.simple = 'failed: ' + e; })
                  // JSON with the console's header needs a preflight the console never grants.
                  .then(() => fetch(target, {method: 'POST', headers: {'Content-Type': 'application/json',
                      'X-Workqueue-Console-Token': 'guessed'}, body}))
                  .then(r => { result.json = 'status ' + r.status; }, e => { result.json = 'blocked'; })
                  .then(() => done(result));""", target, body);
        assertThat(outcome).containsEntry("json", "blocked");

        // A form posted across origins, as a malicious page would.
        driver.executeScript("""
                const form = document.createElement('form');
                form.method = 'POST'; form.action = arguments[0]; form.enctype = 'text/plain';
                const field = document.createElement('input');
                field.name = arguments[1]; field.value = '';
                form.append(field); document.body.append(form); form.submit();""", target, body);
        new WebDriverWait(driver, WAIT).until(d -> driver.getCurrentUrl().equals(target));
        assertThat(driver.findElement(By.tagName("body")).getText()).contains("refused");

        open(console() + "#/item?table=webflux_demo&queue=" + encode(tiles.name()) + "&key=" + encode(stalledKey));
        loaded("item");
        assertThat(driver.findElement(By.id("item-states")).getText()).isEqualTo("stalled");
        assertThat(driver.findElement(By.id("item-error")).getText()).isEqualTo("renderer ran out of memory on tile 1");
    }

    @Test
    @Order(5)
    void pauseTheQueueFromTheListSeeNothingClaimedThenResumeAndSeeItDrain() {
        open(console());
        loaded("queues");
        WebElement pause = pauseButton(tiles.name());
        assertThat(pause.getText()).isEqualTo("Pause");
        pause.click();
        assertThat(pause.getText()).isEqualTo("Really pause?");
        pause.click();
        await().atMost(WAIT).until(() -> driver.findElement(By.id("message")).getText().startsWith("Paused"));
        assertThat(tiles.stats().block(WAIT).paused()).isTrue();
        // The list follows the stats read in the background, at most stats-max-age behind.
        await().atMost(WAIT).until(() -> {
            reload();
            loaded("queues");
            return cell(tiles.name(), 7).contains("paused");
        });

        TileKey waiting = new TileKey("paused", 7, 7);
        tiles.enqueueKeys(waiting).block(WAIT);
        String stored = KeyCodec.defaultFor(TileKey.class).encode(waiting);
        // The enqueue wakes the service's worker at once (its notify channel), and it polls every 2 s:
        // whatever it claims meanwhile, the tile stays.
        await().during(Duration.ofMillis(2500)).atMost(WAIT).until(() -> !completed(stored));
        Browser.screenshot(driver, "paused");

        reload();
        loaded("queues");
        WebElement resume = pauseButton(tiles.name());
        assertThat(resume.getText()).isEqualTo("Resume");
        resume.click();
        await().atMost(WAIT).until(() -> driver.findElement(By.id("message")).getText().startsWith("Resumed"));
        await().atMost(WAIT).until(() -> completed(stored));
        await().atMost(WAIT).until(() -> {
            reload();
            loaded("queues");
            return !cell(tiles.name(), 7).contains("paused");
        });
    }

    /** The pause or resume button of the queue list's row for {@code queue}. */
    static WebElement pauseButton(String queue) {
        return (WebElement) driver.executeScript("""
                const row = [...document.querySelectorAll('#queues tr.queue')].find(r => r.dataset.queue === arguments[0]);
                return row.querySelector('button.pause');""", queue);
    }

    /** Whether the tile with this stored key has completed. */
    boolean completed(String storedKey) {
        return Boolean.TRUE.equals(Mono.usingWhen(database.create(), (Connection c) -> Mono.from(c.createStatement(
                                "SELECT completed_at IS NOT NULL FROM " + TABLE + " WHERE queue_name = $1 AND item_key = $2")
                        .bind(0, tiles.name()).bind(1, storedKey).execute())
                        .flatMap(r -> Mono.from(r.map((row, meta) -> row.get(0, Boolean.class)))),
                Connection::close).block(WAIT));
    }

    static String encode(String value) {
        return java.net.URLEncoder.encode(value, java.nio.charset.StandardCharsets.UTF_8).replace("+", "%20");
    }

    /** {@code value} as a JSON string. */
    static String json(String value) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : value.toCharArray()) {
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        return out.append('"').toString();
    }
}
