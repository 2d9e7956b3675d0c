package io.workqueue.spring.boot.autoconfigure.console;

import io.workqueue.spring.boot.console.WorkQueueConsole;

import static org.assertj.core.api.Assertions.assertThat;
import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.when;

import io.workqueue.spring.boot.autoconfigure.WorkQueueAutoConfiguration;
import io.workqueue.testing.TestDatabase;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.r2dbc.autoconfigure.R2dbcAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.web.server.WebServer;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.boot.web.server.context.WebServerInitializedEvent;
import org.springframework.test.web.reactive.server.WebTestClient;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.ServerResponse;
import io.workqueue.testing.ExpectedLogs;

/**
 * When the console is served: only in a reactive web application, only when enabled, under its
 * path. None of this needs a database (the page opens no connection).
 */
@ExtendWith(OutputCaptureExtension.class)
@ExtendWith(ExpectedLogs.class)
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
                    .expectHeader().valueEquals("Content-Security-Policy", WorkQueueConsole.CONTENT_SECURITY_POLICY)
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
    void itSaysWhereItIsOnceWhenTheServerListensAndNotForAManagementServer(CapturedOutput output) {
        reactive.withPropertyValues("workqueue.console.enabled=true", "workqueue.console.path=/ops/queues").run(context -> {
            assertThat(context).hasNotFailed();
            context.publishEvent(new ServerListening(9081, "management"));
            assertThat(output.getAll()).doesNotContain("Work queue console at");
            context.publishEvent(new ServerListening(8123, null));
            context.publishEvent(new ServerListening(8124, null));
        });
        assertThat(output.getAll()).containsOnlyOnce("Work queue console at");
        assertThat(output.getAll()).contains("Work queue console at http://localhost:8123/ops/queues/ (read-only)");
    }

    @Test
    void itsLocationNamesTheSchemeHostPortBasePathAndPath() {
        assertThat(ConsoleLocationLog.location(false, null, 8080, "", "/workqueue")).isEqualTo("http://localhost:8080/workqueue/");
        assertThat(ConsoleLocationLog.location(true, "0.0.0.0", 8443, "/app/", "/ops/queues"))
                .isEqualTo("https://localhost:8443/app/ops/queues/");
        assertThat(ConsoleLocationLog.location(false, "10.0.0.7", 80, "app", "/workqueue")).isEqualTo("http://10.0.0.7:80/app/workqueue/");
        assertThat(ConsoleLocationLog.location(false, "::1", 8080, "", "/workqueue")).isEqualTo("http://[::1]:8080/workqueue/");
        // No port known: the path alone, rather than an address that may be wrong.
        assertThat(ConsoleLocationLog.location(false, null, -1, "", "/workqueue")).isEqualTo("/workqueue/");
    }

    /** What a web server publishes once it listens on {@code port}; a management server has a namespace. */
    private static final class ServerListening extends WebServerInitializedEvent {
        private final WebServerApplicationContext context;

        ServerListening(int port, @Nullable String namespace) {
            super(server(port));
            this.context = mock(WebServerApplicationContext.class);
            when(context.getServerNamespace()).thenReturn(namespace);
        }

        @Override
        public WebServerApplicationContext getApplicationContext() {
            return context;
        }

        private static WebServer server(int port) {
            return new WebServer() {
                @Override
                public void start() {}

                @Override
                public void stop() {}

                @Override
                public int getPort() {
                    return port;
                }
            };
        }
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
