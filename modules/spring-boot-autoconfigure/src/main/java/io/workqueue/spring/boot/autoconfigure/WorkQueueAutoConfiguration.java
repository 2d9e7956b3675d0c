package io.workqueue.spring.boot.autoconfigure;

import io.r2dbc.spi.ConnectionFactory;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.spring.boot.WorkQueueBuilderCustomizer;
import java.util.Map;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import tools.jackson.databind.json.JsonMapper;

/**
 * Auto-configuration of reactive-workqueue: the queues of {@code workqueue.queues.*} as beans, on
 * the application's R2DBC {@code ConnectionFactory}, with their notification listeners, the tables
 * (when {@code workqueue.schema.apply} is set), a worker per {@code WorkQueueHandler} bean,
 * housekeeping, and an orderly shutdown. See {@link WorkQueueProperties} for every setting and
 * {@link WorkQueuePhases} for the shutdown order.
 *
 * <p>Active when reactive-workqueue and R2DBC are on the classpath, a {@code ConnectionFactory} bean
 * exists, and {@code workqueue.enabled} is not false. Every bean backs off when the application
 * defines its own: a queue bean of the same name, a {@link WorkQueueConnectionFactories}.
 *
 * <p>Nothing here connects to the database while the context starts, unless the schema is to be
 * applied: queues and listeners connect on first use, and workers and housekeeping start their
 * first statements asynchronously, riding out a database that is not reachable yet.
 */
@AutoConfiguration(afterName = {
        "org.springframework.boot.r2dbc.autoconfigure.R2dbcAutoConfiguration",
        "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
        "org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration",
        "org.springframework.boot.micrometer.tracing.autoconfigure.MicrometerTracingAutoConfiguration"})
@ConditionalOnClass({ReactiveWorkQueue.class, ConnectionFactory.class})
@ConditionalOnBean(ConnectionFactory.class)
@ConditionalOnProperty(prefix = WorkQueueProperties.PREFIX, name = "enabled", havingValue = "true", matchIfMissing = true)
@EnableConfigurationProperties(WorkQueueProperties.class)
@Import(QueueBeanRegistrar.class)
public class WorkQueueAutoConfiguration {

    /** Creates the auto-configuration; Spring calls it. */
    public WorkQueueAutoConfiguration() {}

    /** The application's connection factory for statements, and what it wraps for the listeners. */
    @Bean
    @ConditionalOnMissingBean
    WorkQueueConnectionFactories workQueueConnectionFactories(ConnectionFactory connectionFactory) {
        return WorkQueueConnectionFactories.of(connectionFactory);
    }

    @Bean
    NotificationListeners workQueueNotificationListeners(WorkQueueConnectionFactories connections,
            WorkQueueProperties properties) {
        return new NotificationListeners(connections, properties.getListener());
    }

    @Bean
    @ConditionalOnProperty(prefix = WorkQueueProperties.PREFIX, name = "schema.apply", havingValue = "true")
    SchemaInitializer workQueueSchemaInitializer(WorkQueueProperties properties,
            WorkQueueConnectionFactories connections) {
        return new SchemaInitializer(properties, connections);
    }

    @Bean
    QueueFactory workQueueFactory(WorkQueueProperties properties, WorkQueueConnectionFactories connections,
            NotificationListeners listeners, ObjectProvider<WorkQueueBuilderCustomizer> customizers,
            ObjectProvider<JsonMapper> jsonMapper, ObjectProvider<SchemaInitializer> schema) {
        return new QueueFactory(properties, connections, listeners, customizers, jsonMapper, schema.getIfAvailable());
    }

    @Bean
    QueueWorkers workQueueWorkers(ConfigurableListableBeanFactory beanFactory, WorkQueueProperties properties) {
        return new QueueWorkers(beanFactory, properties);
    }

    @Bean
    @ConditionalOnProperty(prefix = WorkQueueProperties.PREFIX, name = "housekeeping.enabled", havingValue = "true",
            matchIfMissing = true)
    QueueHousekeeping workQueueHousekeeping(Map<String, ReactiveWorkQueue<?>> queues, WorkQueueProperties properties) {
        return new QueueHousekeeping(queues, properties);
    }

    @Bean
    QueueShutdown workQueueShutdown(QueueFactory queues, NotificationListeners listeners,
            ObjectProvider<QueueWorkers> workers) {
        return new QueueShutdown(queues, listeners, workers);
    }

    /** Hands the application's {@code MeterRegistry} to every queue, when Micrometer is present. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "io.micrometer.core.instrument.MeterRegistry")
    static class Metrics {
        @Bean
        WorkQueueBuilderCustomizer workQueueMeterRegistryCustomizer(
                ObjectProvider<io.micrometer.core.instrument.MeterRegistry> registry) {
            return (queueBean, builder) -> registry.ifUnique(builder::meterRegistry);
        }
    }

    /**
     * Hands the application's {@code ObservationRegistry} (Spring Boot makes one with Actuator) to
     * every queue, when Micrometer's Observation API is present: its operations and its workers'
     * handler runs are observed, as timers and, with tracing on, spans.
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "io.micrometer.observation.ObservationRegistry")
    static class Observations {
        @Bean
        WorkQueueBuilderCustomizer workQueueObservationRegistryCustomizer(
                ObjectProvider<io.micrometer.observation.ObservationRegistry> registry) {
            return (queueBean, builder) -> registry.ifUnique(builder::observationRegistry);
        }
    }

    /**
     * With Micrometer Tracing and a {@code Tracer}: the spans of the queues' observations, which
     * record the trace context an enqueue stores and link a handler's span to it. Ordered ahead of
     * Spring Boot's default tracing handler, which would make those spans without the links; it
     * handles the queues' observations only.
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "io.micrometer.tracing.Tracer")
    static class Tracing {
        @Bean
        @ConditionalOnBean(io.micrometer.tracing.Tracer.class)
        @ConditionalOnMissingBean
        @org.springframework.core.annotation.Order(org.springframework.core.Ordered.HIGHEST_PRECEDENCE)
        io.workqueue.observation.WorkQueueTracingObservationHandler workQueueTracingObservationHandler(
                io.micrometer.tracing.Tracer tracer) {
            return new io.workqueue.observation.WorkQueueTracingObservationHandler(tracer);
        }
    }
}
