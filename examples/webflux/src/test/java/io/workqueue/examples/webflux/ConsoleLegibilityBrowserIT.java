package io.workqueue.examples.webflux;

import static org.assertj.core.api.Assertions.assertThat;

import io.r2dbc.spi.ConnectionFactory;
import io.workqueue.ItemState;
import io.workqueue.QueueItem;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueAdmin;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.support.ui.WebDriverWait;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.annotation.DirtiesContext;

/**
 * The console read as an operator reads it, in a real browser (Debian's headless Chromium, through
 * Selenium) against the running service and a real PostgreSQL: a key, a queue name and an error
 * carrying a right-to-left override or zero-width characters look different from their
 * look-alikes, every hidden character shown as a marked code point while the text the page holds
 * (and the key its actions send) stays exactly what is stored; after an action the banner says what
 * the item is now; long keys and errors wrap rather than widen the page; the page has its icon.
 */
@SpringBootTest(webEnvironment = WebEnvironment.RANDOM_PORT, properties = {
        "workqueue.queues.tiles.name=tiles-legibility-${random.uuid}",
        "workqueue.queues.tiles.worker.enabled=false",
        "workqueue.console.enabled=true",
        "workqueue.console.actions-enabled=true",
        "workqueue.console.stats-max-age=100ms",
        "workqueue.queues.disguised.key-type=java.lang.String",
        // Reads "disguised exe.pdf" without the markers; the suffix keeps runs apart.
        "workqueue.queues.disguised.name=disguised \u202Efdp.exe\u200B ${random.uuid}",
        "workqueue.queues.disguised.worker.enabled=false"})
@DirtiesContext
class ConsoleLegibilityBrowserIT {
    static final Duration WAIT = Duration.ofSeconds(30);
    /** Drawn without care, it reads "invoicedneexe.pdf"... */
    static final String OVERRIDDEN = "invoice\u202Efdp.exe";
    /** ...which is this other key. */
    static final String LOOK_ALIKE = "invoicedneexe.pdf";
    static final String ZERO_WIDTH = "zero\u200Bwidth\uFEFF";
    static final String ZERO_WIDTH_LOOK_ALIKE = "zerowidth";
    static final String ERROR = "could not open invoice\u202Efdp.exe\u200B";

    /**
     * What the operator reads in an element: its text as drawn, each hidden character replaced by
     * the marker the page draws for it ({@code <U+202E>}), taken from the rendered style.
     */
    static final String SEEN = """
            const seen = (node) => [...node.childNodes].map((child) => child.nodeType === Node.TEXT_NODE ? child.data
                : child.classList && child.classList.contains('hidden-char')
                    ? '<' + JSON.parse(getComputedStyle(child, '::before').content) + '>' : seen(child)).join('');
            """;

    static ChromeDriver driver;

    @LocalServerPort
    int port;

    @Autowired
    @Qualifier("disguised")
    ReactiveWorkQueue<String> disguised;

    @Autowired
    ConnectionFactory database;

    WorkQueueAdmin admin;

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

    @BeforeEach
    void freshItems() {
        admin = WorkQueueAdmin.builder(database).tablePrefix("webflux_demo").queue(disguised).build();
        List<String> keys = List.of(OVERRIDDEN, LOOK_ALIKE, ZERO_WIDTH, ZERO_WIDTH_LOOK_ALIKE);
        admin.remove(disguised.name(), keys).block(WAIT);
        disguised.enqueueKeys(keys).block(WAIT);
        // Delayed, each with the error: a retry is offered, and the list of delayed items shows them.
        disguised.release(Duration.ofHours(1), new IllegalStateException(ERROR), OVERRIDDEN, LOOK_ALIKE).block(WAIT);
    }

    String console() {
        return "http://127.0.0.1:" + port + "/workqueue/";
    }

    String queuePage(String state) {
        return console() + "#/queue?table=webflux_demo&queue=" + ConsoleBrowserIT.encode(disguised.name()) + "&state=" + state;
    }

    String itemPage(String key) {
        return console() + "#/item?table=webflux_demo&queue=" + ConsoleBrowserIT.encode(disguised.name())
                + "&key=" + ConsoleBrowserIT.encode(key);
    }

    /**
     * Opens {@code url}. The view's mark is taken off first: a URL that differs only after the '#'
     * redraws the page in place, and {@link #loaded} must wait for the new view, not see the old.
     */
    static void open(String url) {
        driver.executeScript("if (document.body) delete document.body.dataset.loaded;");
        driver = Browser.open(driver, url);
    }

    static void loaded(String name) {
        new WebDriverWait(driver, WAIT).until(d -> name.equals(driver.executeScript("return document.body.dataset.loaded")));
    }

    /** What the operator reads in the element {@code selector} finds (see {@link #SEEN}). */
    static String seen(String selector) {
        return (String) driver.executeScript(SEEN + "return seen(document.querySelector(arguments[0]));", selector);
    }

    static String text(String selector) {
        return (String) driver.executeScript("return document.querySelector(arguments[0]).textContent;", selector);
    }

    /** The item row of the list whose stored key is {@code key}, as a CSS selector. */
    static String row(String key) {
        Long index = (Long) driver.executeScript("""
                return [...document.querySelectorAll('#items tr.item')].findIndex(r => r.dataset.key === arguments[0]) + 1;""", key);
        assertThat(index).as("a row for %s", key).isPositive();
        return "#items tr.item:nth-child(" + index + ")";
    }

    /**
     * The left edge of each character and each hidden-character marker in the element, in stored
     * order, as drawn: ascending when the text reads left to right as stored.
     */
    @SuppressWarnings("unchecked")
    static List<Double> drawnLeftEdges(String selector) {
        List<Number> edges = (List<Number>) driver.executeScript("""
                const edges = [];
                const walk = (node) => {
                  for (const child of node.childNodes) {
                    if (child.nodeType === Node.TEXT_NODE) {
                      for (let i = 0; i < child.data.length; i++) {
                        const range = document.createRange();
                        range.setStart(child, i);
                        range.setEnd(child, i + 1);
                        const box = range.getBoundingClientRect();
                        if (box.width > 0) edges.push(box.left);
                      }
                    } else if (child.classList.contains('hidden-char')) {
                      edges.push(child.getBoundingClientRect().left);
                    } else {
                      walk(child);
                    }
                  }
                };
                walk(document.querySelector(arguments[0]));
                return edges;""", selector);
        List<Double> lefts = new ArrayList<>();
        edges.forEach(edge -> lefts.add(edge.doubleValue()));
        return lefts;
    }

    @Test
    void aBidiOverrideOrZeroWidthCharacterShowsAsAMarkedCodePointWhereverItIsDrawn() {
        // The queue list: the queue's name.
        open(console());
        loaded("queues");
        String nameCell = "#queues tr.queue[data-queue=\"" + cssString(disguised.name()) + "\"] td:first-child";
        String shownName = disguised.name().replace("\u202E", "<U+202E>").replace("\u200B", "<U+200B>");
        assertThat(seen(nameCell)).isEqualTo(shownName);
        assertThat(text(nameCell)).isEqualTo(disguised.name());

        // The queue's delayed items: each key and error as stored, each told apart from its look-alike.
        open(queuePage("delayed"));
        loaded("queue");
        assertThat(seen("h1")).isEqualTo(shownName);
        assertThat(seen("#crumbs")).contains(shownName);
        assertThat(seen(row(OVERRIDDEN) + " td.key")).isEqualTo("invoice<U+202E>fdp.exe");
        assertThat(seen(row(LOOK_ALIKE) + " td.key")).isEqualTo(LOOK_ALIKE);
        assertThat(text(row(OVERRIDDEN) + " td.key a")).isEqualTo(OVERRIDDEN);
        assertThat(drawnLeftEdges(row(OVERRIDDEN) + " td.key a")).hasSize(OVERRIDDEN.length()).isSorted();
        assertThat(seen(row(OVERRIDDEN) + " td.error")).isEqualTo("could not open invoice<U+202E>fdp.exe<U+200B>");
        assertThat(text(row(OVERRIDDEN) + " td.error")).isEqualTo(ERROR);
        // A marker takes room: it is there to be seen.
        assertThat(width(row(OVERRIDDEN) + " td.key .hidden-char")).isGreaterThan(10.0);
        Browser.screenshot(driver, "hidden-characters");

        open(queuePage("ready"));
        loaded("queue");
        assertThat(seen(row(ZERO_WIDTH) + " td.key")).isEqualTo("zero<U+200B>width<U+FEFF>");
        assertThat(seen(row(ZERO_WIDTH_LOOK_ALIKE) + " td.key")).isEqualTo(ZERO_WIDTH_LOOK_ALIKE);
        assertThat(text(row(ZERO_WIDTH) + " td.key a")).isEqualTo(ZERO_WIDTH);

        // The detail page, reached by its link.
        open(queuePage("delayed"));
        loaded("queue");
        WebElement link = driver.findElement(By.cssSelector(row(OVERRIDDEN) + " td.key a"));
        String url = (String) driver.executeScript("return arguments[0].href", link);
        driver = Browser.navigate(driver, d -> link.click(), url);
        loaded("item");
        assertThat(seen("#item-key")).isEqualTo("invoice<U+202E>fdp.exe");
        assertThat(seen("#item-stored-key")).isEqualTo("invoice<U+202E>fdp.exe");
        assertThat(text("#item-stored-key")).isEqualTo(OVERRIDDEN);
        assertThat(drawnLeftEdges("#item-stored-key")).hasSize(OVERRIDDEN.length()).isSorted();
        assertThat(seen("#item-error")).isEqualTo("could not open invoice<U+202E>fdp.exe<U+200B>");
        assertThat(seen("h1")).isEqualTo("Item of " + shownName);
        assertThat(seen("#crumbs")).contains(shownName);
    }

    @Test
    void actionsOnKeysWithHiddenCharactersAddressTheExactStoredKeyAndTheBannerSaysWhatTheItemIsNow() {
        open(itemPage(OVERRIDDEN));
        loaded("item");
        assertThat(driver.findElement(By.id("item-states")).getText()).isEqualTo("delayed");
        driver.findElement(By.cssSelector("#actions button.retry")).click();
        new WebDriverWait(driver, WAIT).until(d -> !text("#message").isEmpty());

        assertThat(seen("#message")).isEqualTo("Retried invoice<U+202E>fdp.exe: due now, attempts reset. Now ready.");
        assertThat(driver.findElement(By.id("item-states")).getText()).isEqualTo("ready");
        assertThat(states(OVERRIDDEN)).containsExactly(ItemState.READY);
        assertThat(states(LOOK_ALIKE)).containsExactly(ItemState.DELAYED);

        // Remove, from the list: the zero-width key goes, its look-alike stays.
        open(queuePage("ready"));
        loaded("queue");
        assertThat(text("#message")).isEmpty();
        WebElement remove = driver.findElement(By.cssSelector(row(ZERO_WIDTH) + " button.remove"));
        remove.click();
        remove.click(); // "Really remove?"
        new WebDriverWait(driver, WAIT).until(d -> !text("#message").isEmpty());
        assertThat(seen("#message")).isEqualTo("Removed zero<U+200B>width<U+FEFF>.");
        assertThat(admin.item(disguised.name(), ZERO_WIDTH).blockOptional(WAIT)).isEmpty();
        assertThat(states(ZERO_WIDTH_LOOK_ALIKE)).containsExactly(ItemState.READY);
        @SuppressWarnings("unchecked")
        List<String> listed = (List<String>) driver.executeScript(
                "return [...document.querySelectorAll('#items tr.item')].map(r => r.dataset.key);");
        assertThat(listed).contains(ZERO_WIDTH_LOOK_ALIKE, OVERRIDDEN).doesNotContain(ZERO_WIDTH);
    }

    @Test
    void longKeysAndErrorsWrapInsteadOfWideningThePageAndNumbersStayOnOneLine() {
        String longKey = "tiles/" + "0123456789abcdef".repeat(30); // keys stop at 512 bytes
        String longError = "java.lang.IllegalStateException:" + "renderer.failed.at.a.very.deep.frame".repeat(25);
        disguised.enqueueKeys(longKey).block(WAIT);
        disguised.release(Duration.ofHours(1), new IllegalStateException(longError), longKey).block(WAIT);

        open(queuePage("delayed"));
        loaded("queue");
        assertThat(pageOverflow()).isLessThanOrEqualTo(0L);
        // The error column is not squeezed by a long key.
        assertThat(width(row(longKey) + " td.error")).isGreaterThanOrEqualTo(width(row(longKey) + " td.key"));
        // Ages and other numbers: one line each.
        assertThat(driver.executeScript("""
                return [...document.querySelectorAll('#items td.num')].filter(cell => {
                  const range = document.createRange();
                  range.selectNodeContents(cell);
                  return new Set([...range.getClientRects()].map(r => Math.round(r.top))).size > 1;
                }).map(cell => cell.textContent);""")).asList().isEmpty();
        Browser.screenshot(driver, "long-key");

        open(itemPage(longKey));
        loaded("item");
        assertThat(text("#item-stored-key")).isEqualTo(longKey);
        assertThat(pageOverflow()).isLessThanOrEqualTo(0L);
        admin.remove(disguised.name(), List.of(longKey)).block(WAIT);
    }

    /** The drawn width of the element {@code selector} finds, in CSS pixels. */
    static double width(String selector) {
        return ((Number) driver.executeScript("return document.querySelector(arguments[0]).getBoundingClientRect().width;",
                selector)).doubleValue();
    }

    /** How far the page is wider than the window (scrolls sideways when positive). */
    static Long pageOverflow() {
        return (Long) driver.executeScript("return document.documentElement.scrollWidth - document.documentElement.clientWidth;");
    }

    @Test
    void thePageHasItsIcon() {
        open(console());
        loaded("queues");
        Object icon = driver.executeAsyncScript("""
                const done = arguments[arguments.length - 1];
                const link = document.querySelector('link[rel~="icon"]');
                if (!link) { done('no icon link'); return; }
                fetch(link.href).then(r => done(r.status + ' ' + r.headers.get('Content-Type')), e => done(String(e)));""");
        assertThat(icon).asString().startsWith("200 image/svg+xml");
    }

    private Set<ItemState> states(String key) {
        QueueItem item = admin.item(disguised.name(), key).block(WAIT);
        assertThat(item).as("the item %s", key).isNotNull();
        return item.states();
    }

    /** {@code value} inside a double-quoted CSS string. */
    private static String cssString(String value) {
        return value.replace("\\", "\\\\").replace("\"", "\\\"");
    }
}
