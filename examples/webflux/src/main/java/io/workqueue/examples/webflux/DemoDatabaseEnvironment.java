package io.workqueue.examples.webflux;

import io.workqueue.examples.support.DemoDatabase;
import org.springframework.beans.factory.support.AbstractBeanDefinition;
import org.springframework.boot.EnvironmentPostProcessor;
import org.springframework.boot.SpringApplication;
import org.springframework.context.support.GenericApplicationContext;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;

/**
 * The demo's convenience, not part of the queue's wiring: when {@code spring.r2dbc.url} is empty
 * (WORKQUEUE_R2DBC_URL unset), starts an embedded PostgreSQL and points {@code spring.r2dbc.url} at
 * it, so the example runs on a machine with nothing but Java and Maven. The embedded server is
 * registered as the first bean, so Spring destroys it last, after the connection pool.
 */
class DemoDatabaseEnvironment implements EnvironmentPostProcessor {

    @Override
    public void postProcessEnvironment(ConfigurableEnvironment environment, SpringApplication application) {
        String url = environment.getProperty("spring.r2dbc.url");
        if (url != null && !url.isBlank()) {
            return;
        }
        // Stopped by the context, after everything that uses it: not by a JVM shutdown hook of its
        // own, which would race the context's close on Ctrl-C.
        DemoDatabase database = DemoDatabase.start(false);
        environment.getPropertySources().addFirst(new MapPropertySource("demoDatabase",
                java.util.Map.of("spring.r2dbc.url", database.url())));
        application.addInitializers(context -> ((GenericApplicationContext) context).registerBean("demoDatabase",
                DemoDatabase.class, () -> database,
                definition -> definition.setDestroyMethodName(AbstractBeanDefinition.INFER_METHOD)));
    }
}
