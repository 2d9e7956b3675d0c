package io.workqueue.examples.webflux;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;
import java.net.http.HttpTimeoutException;
import java.util.function.Consumer;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.TimeoutException;
import org.openqa.selenium.WebDriverException;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.remote.http.ClientConfig;

/**
 * Debian's headless Chromium, driven through its own chromedriver by Selenium, for the console's
 * browser tests. Launched as the machine allows it (no network beyond the package registries: no
 * background networking, no component updates, no QUIC, no sync), with a fresh profile each time.
 *
 * <p>Without the binaries the tests are skipped, unless {@code WORKQUEUE_BROWSER_REQUIRED=true}
 * (CI sets it, having installed them), which turns the skip into a failure.
 */
final class Browser {
    static final Path CHROMIUM = Path.of(System.getenv().getOrDefault("WORKQUEUE_CHROMIUM", "/usr/bin/chromium"));
    static final Path CHROMEDRIVER = Path.of(System.getenv().getOrDefault("WORKQUEUE_CHROMEDRIVER", "/usr/bin/chromedriver"));

    /** How long a page load may take before chromedriver reports a timeout. */
    static final Duration PAGE_LOAD_TIMEOUT = Duration.ofSeconds(30);
    /** How long the client waits for chromedriver to answer any command. */
    static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(45);

    private Browser() {}

    /** A new headless Chromium with an empty profile; quit it when done. */
    static ChromeDriver start() {
        boolean present = Files.isExecutable(CHROMIUM) && Files.isExecutable(CHROMEDRIVER);
        String why = "no Chromium at " + CHROMIUM + " or no chromedriver at " + CHROMEDRIVER
                + " (apt-get install chromium chromium-driver)";
        if (!present) {
            if (Boolean.parseBoolean(System.getenv("WORKQUEUE_BROWSER_REQUIRED"))) {
                Assertions.fail(why + ", and WORKQUEUE_BROWSER_REQUIRED is set");
            }
            Assumptions.abort(why);
        }
        Path profile;
        try {
            profile = Files.createTempDirectory("workqueue-chromium-");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        ChromeOptions options = new ChromeOptions();
        options.setBinary(CHROMIUM.toFile());
        options.addArguments("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--no-first-run", "--disable-quic", "--disable-sync",
                "--disable-dev-shm-usage", "--window-size=1280,900", "--user-data-dir=" + profile);
        ChromeDriverService service = new ChromeDriverService.Builder()
                .usingDriverExecutable(CHROMEDRIVER.toFile())
                .usingAnyFreePort()
                .build();
        // Every command is bounded: chromedriver answers a page load that outlives its timeout
        // with an error, and the client gives up on a chromedriver that does not answer at all.
        ChromeDriver driver = new ChromeDriver(service, options, ClientConfig.defaultConfig().readTimeout(COMMAND_TIMEOUT));
        driver.manage().timeouts().scriptTimeout(Duration.ofSeconds(30)).pageLoadTimeout(PAGE_LOAD_TIMEOUT);
        return driver;
    }

    /**
     * Runs a navigation ({@code get}, {@code refresh}, {@code back}) and returns the driver to go on
     * with. Debian's Chromium 156 with its chromedriver once left a {@code get} unanswered for
     * minutes although the page had loaded (DevTools showed it, with its title; the service
     * answered requests; chromedriver's own page-load timeout never fired), one run in about ten.
     * That is the browser tooling, not the console, so a navigation that times out is retried once
     * in a fresh browser, which loads {@code url} (where the navigation should have arrived); the
     * caller's own checks of the page then decide. A second timeout fails the test.
     */
    static ChromeDriver navigate(ChromeDriver driver, Consumer<ChromeDriver> navigation, String url) {
        try {
            navigation.accept(driver);
            return driver;
        } catch (WebDriverException e) {
            if (!timedOut(e)) {
                throw e;
            }
            System.err.println("browser: a navigation to " + url + " timed out (" + e.getClass().getSimpleName()
                    + "); retrying once in a fresh browser");
            try {
                driver.quit();
            } catch (WebDriverException ignored) {
                // quitting stops the chromedriver process whatever the session answers
            }
            ChromeDriver fresh = start();
            fresh.get(url);
            return fresh;
        }
    }

    /** Opens {@code url} through {@link #navigate}; returns the driver to go on with. */
    static ChromeDriver open(ChromeDriver driver, String url) {
        return navigate(driver, d -> d.get(url), url);
    }

    private static boolean timedOut(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof TimeoutException || t instanceof HttpTimeoutException
                    || t instanceof java.util.concurrent.TimeoutException) {
                return true;
            }
        }
        return false;
    }

    /**
     * Saves a screenshot of the page as {@code name}.png into the folder named by
     * {@code WORKQUEUE_CONSOLE_SCREENSHOTS}, when it is set (how {@code docs/console} is made);
     * otherwise does nothing.
     */
    static void screenshot(ChromeDriver driver, String name) {
        String folder = System.getenv("WORKQUEUE_CONSOLE_SCREENSHOTS");
        if (folder == null || folder.isBlank()) {
            return;
        }
        try {
            Path target = Path.of(folder).resolve(name + ".png");
            Files.createDirectories(target.getParent());
            Files.write(target, ((TakesScreenshot) driver).getScreenshotAs(OutputType.BYTES));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
