package io.workqueue.spring.boot.autoconfigure.console;

import java.util.Locale;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.web.server.context.WebServerInitializedEvent;
import org.springframework.context.ApplicationListener;
import org.springframework.core.env.Environment;

/**
 * Says at INFO, once, where the console is, when the application's web server starts listening:
 * {@code Work queue console at http://localhost:8080/workqueue/ (read-only)}. The address is the
 * one to open on the machine itself: {@code server.address} when it names one, else localhost;
 * the scheme is https when {@code server.ssl} is configured; WebFlux's {@code spring.webflux.base-path}
 * comes before the console's path. Without a known port it says the path alone.
 *
 * <p>A management server on a port of its own announces itself with the same event, from a child
 * context with a server namespace; the console is not there, so only a server without a namespace
 * counts. Thread-safe.
 */
final class ConsoleLocationLog implements ApplicationListener<WebServerInitializedEvent> {
    private static final Logger log = LoggerFactory.getLogger(WorkQueueConsoleAutoConfiguration.class);

    private final String path;
    private final boolean actionsEnabled;
    private final Environment environment;
    private final AtomicBoolean logged = new AtomicBoolean();

    ConsoleLocationLog(String path, boolean actionsEnabled, Environment environment) {
        this.path = path;
        this.actionsEnabled = actionsEnabled;
        this.environment = environment;
    }

    /** Logs the console's location for the first server without a namespace; ignores every other. */
    @Override
    public void onApplicationEvent(WebServerInitializedEvent event) {
        if (event.getApplicationContext().getServerNamespace() != null || !logged.compareAndSet(false, true)) {
            return;
        }
        boolean ssl = !"false".equalsIgnoreCase(environment.getProperty("server.ssl.enabled"))
                && (environment.containsProperty("server.ssl.bundle") || environment.containsProperty("server.ssl.key-store")
                        || environment.containsProperty("server.ssl.certificate"));
        log.info("Work queue console at {} ({})",
                location(ssl, environment.getProperty("server.address"), event.getWebServer().getPort(),
                        environment.getProperty("spring.webflux.base-path", ""), path),
                actionsEnabled ? "actions enabled" : "read-only");
    }

    /**
     * The console's address: {@code scheme://host:port<basePath><path>/}, or {@code <basePath><path>/}
     * when {@code port} is not positive (not known). A wildcard or absent {@code address} becomes
     * localhost; an IPv6 literal gets its brackets.
     */
    static String location(boolean ssl, @Nullable String address, int port, String basePath, String path) {
        String base = basePath.strip();
        if (base.endsWith("/")) {
            base = base.substring(0, base.length() - 1);
        }
        if (!base.isEmpty() && !base.startsWith("/")) {
            base = "/" + base;
        }
        String where = base + path + "/";
        if (port <= 0) {
            return where;
        }
        String host = address == null || address.isBlank() || address.equals("0.0.0.0") || address.equals("::")
                || address.equals("0:0:0:0:0:0:0:0") ? "localhost" : address.strip().toLowerCase(Locale.ROOT);
        if (host.contains(":") && !host.startsWith("[")) {
            host = "[" + host + "]";
        }
        return (ssl ? "https" : "http") + "://" + host + ":" + port + where;
    }
}
