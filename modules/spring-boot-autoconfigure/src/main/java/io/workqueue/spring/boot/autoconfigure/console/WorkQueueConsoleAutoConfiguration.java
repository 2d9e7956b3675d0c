package io.workqueue.spring.boot.autoconfigure.console;

import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueAdmin;
import io.workqueue.spring.boot.autoconfigure.WorkQueueAutoConfiguration;
import io.workqueue.spring.boot.autoconfigure.WorkQueueConnectionFactories;
import io.workqueue.spring.boot.autoconfigure.WorkQueueProperties;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.ServerResponse;

/**
 * The web console: a page and a JSON API under {@code workqueue.console.path} (default
 * {@code /workqueue}) showing every queue of every table the application's queues use (and of
 * {@code workqueue.table-prefix}), their items by state and one item in detail, through a
 * {@link WorkQueueAdmin} per table that knows each queue bean's attempt limit and codec.
 *
 * <p>Active only in a reactive web application (WebFlux is an optional dependency of this module)
 * with {@code workqueue.console.enabled=true}. Read-only unless
 * {@code workqueue.console.actions-enabled=true}; even then an action is accepted only as a
 * same-origin JSON POST carrying the console's token. The page is plain HTML, CSS and JavaScript
 * from this jar, under a Content-Security-Policy that allows nothing but them; it writes every key,
 * name and error as text. The console adds no authentication: put it behind the application's own
 * (Spring Security, a gateway) like any other administrative endpoint.
 */
@AutoConfiguration(after = WorkQueueAutoConfiguration.class)
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.REACTIVE)
@ConditionalOnClass({RouterFunction.class, WorkQueueAdmin.class})
@ConditionalOnBean(WorkQueueProperties.class)
@ConditionalOnProperty(prefix = WorkQueueProperties.PREFIX, name = "console.enabled", havingValue = "true")
public class WorkQueueConsoleAutoConfiguration {

    /** Creates the auto-configuration; Spring calls it. */
    public WorkQueueConsoleAutoConfiguration() {}

    /** The console's routes, over one admin per table prefix in use. */
    @Bean
    RouterFunction<ServerResponse> workQueueConsoleRoutes(Map<String, ReactiveWorkQueue<?>> queues,
            WorkQueueProperties properties, WorkQueueConnectionFactories connections) {
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
        WorkQueueProperties.Console console = properties.getConsole();
        return new ConsoleHandlers(console.getPath(), console.isActionsEnabled(), admins, console.getStatsMaxAge()).routes();
    }
}
