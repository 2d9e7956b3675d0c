package io.workqueue.spring.boot.autoconfigure.console;

import static org.assertj.core.api.Assertions.assertThat;

import io.workqueue.spring.boot.autoconfigure.WorkQueueAutoConfiguration;
import io.workqueue.spring.boot.testing.TestDatabase;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.r2dbc.autoconfigure.R2dbcAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;
import org.springframework.test.web.reactive.server.WebTestClient;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.ServerResponse;

/**
 * When the console is served: only in a reactive web application, only when enabled, under its
 * path. None of this needs a database (the page opens no connection).
 */
class WorkQueueConsoleAutoConfigurationTest {
    private static final AutoConfigurations CONFIGURATIONS = AutoConfigurations.of(R2dbcAutoConfiguration.class,
            WorkQueueAutoConfiguration.class, WorkQueueConsoleAutoConfiguration.class);
    private static final String[] PROPERTIES = {"spring.r2dbc.url=" + TestDatabase.UNREACHABLE_URL,
            "workqueue.housekeeping.enabled=false", "workqueue.queues.tiles.key-type=java.lang.String",
            "workqueue.queues.tiles.worker.enabled=false"};

    private final ReactiveWebApplicationContextRunner reactive = new ReactiveWebApplicationContextRunner()
            .withConfiguration(CONFIGURATIONS)
            .withPropertyValues(PROPERTIES);

    @Test
    void theConsoleIsOffByDefault() {
        reactive.run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context).doesNotHaveBean("workQueueConsoleRoutes");
        });
    }

    @Test
    void enabledItServesItsPageUnderAStrictPolicy() {
        reactive.withPropertyValues("workqueue.console.enabled=true").run(context -> {
            assertThat(context).hasNotFailed();
            WebTestClient client = WebTestClient.bindToRouterFunction(routes(context.getBean("workQueueConsoleRoutes"))).build();
            client.get().uri("/workqueue/").exchange()
                    .expectStatus().isOk()
                    .expectHeader().valueEquals("Content-Security-Policy", ConsoleGuard.CONTENT_SECURITY_POLICY)
                    .expectBody(String.class).value(page -> assertThat(page)
                            .contains("name=\"workqueue-actions\" content=\"false\"")
                            .doesNotContain("{{token}}"));
            client.post().uri("/workqueue/api/retry").bodyValue("{}").exchange()
                    .expectStatus().isForbidden()
                    .expectBody(String.class).value(body -> assertThat(body).contains("actions are disabled"));
        });
    }

    @Test
    void twoBeansOfOneLogicalQueueAreOneQueueToTheConsole() {
        reactive.withPropertyValues("workqueue.console.enabled=true", "workqueue.queues.producer.name=shared",
                        "workqueue.queues.producer.key-type=java.lang.String", "workqueue.queues.worker.name=shared",
                        "workqueue.queues.worker.key-type=java.lang.String", "workqueue.queues.worker.worker.enabled=false",
                        "workqueue.queues.elsewhere.table-prefix=other", "workqueue.queues.elsewhere.worker.enabled=false")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context).hasBean("workQueueConsoleRoutes");
                });
    }

    @Test
    void itIsServedUnderTheConfiguredPath() {
        reactive.withPropertyValues("workqueue.console.enabled=true", "workqueue.console.path=/ops/queues").run(context -> {
            WebTestClient client = WebTestClient.bindToRouterFunction(routes(context.getBean("workQueueConsoleRoutes"))).build();
            client.get().uri("/ops/queues/").exchange().expectStatus().isOk();
            client.get().uri("/workqueue/").exchange().expectStatus().isNotFound();
        });
    }

    @Test
    void aPathThatIsNotAPlainPathFailsTheStartNamingTheProperty() {
        reactive.withPropertyValues("workqueue.console.enabled=true", "workqueue.console.path=/ops/<x>/").run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).rootCause().hasMessageContaining("console.path");
        });
    }

    @Test
    void notInAnApplicationThatIsNotReactiveWeb() {
        new ApplicationContextRunner().withConfiguration(CONFIGURATIONS).withPropertyValues(PROPERTIES)
                .withPropertyValues("workqueue.console.enabled=true")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context).doesNotHaveBean("workQueueConsoleRoutes");
                });
    }

    @Test
    void notWithoutWebFluxOnTheClasspath() {
        reactive.withClassLoader(new FilteredClassLoader(RouterFunction.class))
                .withPropertyValues("workqueue.console.enabled=true")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context).doesNotHaveBean("workQueueConsoleRoutes");
                });
    }

    @SuppressWarnings("unchecked")
    private static RouterFunction<ServerResponse> routes(Object bean) {
        return (RouterFunction<ServerResponse>) bean;
    }

    @Test
    void reactorNettyBeforeTheKeepAliveFixIsNamedInAWarning() {
        assertThat(WorkQueueConsoleAutoConfiguration.keepAliveWarning("1.3.6"))
                .contains("Reactor Netty 1.3.6", "#4347", "1.3.8");
        assertThat(WorkQueueConsoleAutoConfiguration.keepAliveWarning("1.3.7")).isNotNull();
        assertThat(WorkQueueConsoleAutoConfiguration.keepAliveWarning("1.2.18")).isNotNull();
        assertThat(WorkQueueConsoleAutoConfiguration.keepAliveWarning("1.3.8")).isNull();
        assertThat(WorkQueueConsoleAutoConfiguration.keepAliveWarning("1.3.10")).isNull();
        assertThat(WorkQueueConsoleAutoConfiguration.keepAliveWarning("1.4.0-M1")).isNull();
        assertThat(WorkQueueConsoleAutoConfiguration.keepAliveWarning("2.0.0-SNAPSHOT")).isNull();
        // Unknown: nothing said, rather than a warning that may be false.
        assertThat(WorkQueueConsoleAutoConfiguration.keepAliveWarning(null)).isNull();
        assertThat(WorkQueueConsoleAutoConfiguration.keepAliveWarning("unknown")).isNull();
        assertThat(WorkQueueConsoleAutoConfiguration.keepAliveWarning("1.3")).isNull();
    }
}
