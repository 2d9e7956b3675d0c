package io.workqueue.examples.webflux;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;

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
        ChromeDriver driver = new ChromeDriver(service, options);
        driver.manage().timeouts().scriptTimeout(Duration.ofSeconds(30));
        return driver;
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
