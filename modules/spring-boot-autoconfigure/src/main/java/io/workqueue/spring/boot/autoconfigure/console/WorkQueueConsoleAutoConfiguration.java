package io.workqueue.spring.boot.autoconfigure.console;

import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueAdmin;
import io.workqueue.spring.boot.autoconfigure.WorkQueueAutoConfiguration;
import io.workqueue.spring.boot.autoconfigure.WorkQueueConnectionFactories;
import io.workqueue.spring.boot.autoconfigure.WorkQueueProperties;
import io.workqueue.spring.boot.console.WorkQueueConsole;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.ServerResponse;

/**
 * The web console ({@link WorkQueueConsole}, from {@code reactive-workqueue-console}): a page and a
 * JSON API under {@code workqueue.console.path} (default
 * {@code /workqueue}) showing every queue of every table the application's queues use (and of
 * {@code workqueue.table-prefix}), their items by state and one item in detail, through a
 * {@link WorkQueueAdmin} per table that knows each queue bean's attempt limit and codec.
 *
 * <p>Active only in a reactive web application with {@code reactive-workqueue-console} on the class
 * path (both are optional dependencies of this module) and {@code workqueue.console.enabled=true}. Read-only unless
 * {@code workqueue.console.actions-enabled=true}; even then an action is accepted only as a
 * same-origin JSON POST carrying the console's token. The page is plain HTML, CSS and JavaScript
 * from this jar, under a Content-Security-Policy that allows nothing but them; it writes every key,
 * name and error as text, its direction isolated and each invisible, control or bidirectional
 * character shown as its code point. Once the web server listens, it logs its address. The console
 * adds no authentication: put it behind the application's own (Spring Security, a gateway) like any
 * other administrative endpoint.
 */
@AutoConfiguration(after = WorkQueueAutoConfiguration.class)
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.REACTIVE)
@ConditionalOnClass({RouterFunction.class, WorkQueueConsole.class})
@ConditionalOnBean(WorkQueueProperties.class)
@ConditionalOnProperty(prefix = WorkQueueConsoleProperties.PREFIX, name = "enabled", havingValue = "true")
@EnableConfigurationProperties(WorkQueueConsoleProperties.class)
public class WorkQueueConsoleAutoConfiguration {
    private static final Logger log = LoggerFactory.getLogger(WorkQueueConsoleAutoConfiguration.class);

    /** The first Reactor Netty whose HTTP server answers every request on a kept-alive connection. */
    static final int[] FIRST_KEEP_ALIVE_SAFE_REACTOR_NETTY = {1, 3, 8};

    /** Creates the auto-configuration; Spring calls it. */
    public WorkQueueConsoleAutoConfiguration() {}

    /** The console's routes, over one admin per table prefix in use. */
    @Bean
    RouterFunction<ServerResponse> workQueueConsoleRoutes(Map<String, ReactiveWorkQueue<?>> queues,
            WorkQueueProperties properties, WorkQueueConsoleProperties console, WorkQueueConnectionFactories connections) {
        Map<String, WorkQueueAdmin.Builder> builders = new TreeMap<>();
        builders.put(properties.getTablePrefix(),
                WorkQueueAdmin.builder(connections.statements()).tablePrefix(properties.getTablePrefix()));
        Set<List<String>> registered = new HashSet<>();
        queues.values().forEach(queue -> {
            // Two beans of one logical queue (a producer's and a worker's, say) are one queue to the
            // console: the first counts.
            if (registered.add(List.of(queue.config().tablePrefix(), queue.config().name()))) {
                String prefix = queue.config().tablePrefix();
                builders.computeIfAbsent(prefix, p -> WorkQueueAdmin.builder(connections.statements()).tablePrefix(p))
                        .queue(queue);
            }
        });
        Map<String, WorkQueueAdmin> admins = new TreeMap<>();
        builders.forEach((prefix, builder) -> admins.put(prefix, builder.build()));
        String warning = keepAliveWarning(reactorNettyHttpVersion());
        if (warning != null) {
            log.warn(warning);
        }
        return new WorkQueueConsole(console.getPath(), console.isActionsEnabled(), admins, console.getStatsMaxAge()).routes();
    }

    /**
     * Says where the console is once the web server listens (see {@link ConsoleLocationLog}). Apart,
     * so that an application whose web server classes are absent still gets the console.
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.boot.web.server.context.WebServerInitializedEvent")
    static class LocationLog {
        @Bean
        ConsoleLocationLog workQueueConsoleLocationLog(WorkQueueConsoleProperties console, Environment environment) {
            return new ConsoleLocationLog(console.getPath(), console.isActionsEnabled(), environment);
        }
    }

    /**
     * Why the console's requests may hang on this Reactor Netty, or null when they do not (or the
     * server is not Reactor Netty, or its version is unknown): every release before 1.3.8 tried
     * (1.2.18, 1.3.0 to 1.3.7) stops reading a kept-alive connection after a request that arrived
     * before the previous one finished (reactor/reactor-netty #4347, #4361). Spring Boot 4.0.7
     * brings 1.3.6 unless told otherwise.
     */
    static @Nullable String keepAliveWarning(@Nullable String reactorNettyVersion) {
        String[] parts = reactorNettyVersion == null ? new String[0] : reactorNettyVersion.split("[.-]");
        if (parts.length < 3) {
            return null;
        }
        int[] version = new int[3];
        try {
            for (int i = 0; i < version.length; i++) {
                version[i] = Integer.parseInt(parts[i]);
            }
        } catch (NumberFormatException e) {
            return null;
        }
        if (Arrays.compare(version, FIRST_KEEP_ALIVE_SAFE_REACTOR_NETTY) >= 0) {
            return null;
        }
        return "Reactor Netty " + reactorNettyVersion + " can stop answering a kept-alive HTTP connection"
                + " (reactor/reactor-netty #4347, #4361): the work queue console's requests, like any others,"
                + " may hang now and then. Use Reactor Netty 1.3.8 or later: import reactive-workqueue-bom, or"
                + " under spring-boot-starter-parent set reactor-bom.version=2025.0.8 and netty.version=4.2.18.Final";
    }

    /** The version of Reactor Netty's HTTP server on the class path, or null when absent or unknown. */
    private static @Nullable String reactorNettyHttpVersion() {
        try {
            Class<?> server = Class.forName("reactor.netty.http.server.HttpServer", false,
                    WorkQueueConsoleAutoConfiguration.class.getClassLoader());
            return server.getPackage().getImplementationVersion();
        } catch (ClassNotFoundException | LinkageError e) {
            return null;
        }
    }
}
