package io.workqueue.spring.boot.autoconfigure;

import io.workqueue.ReactiveWorkQueue;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.CompositeReactiveHealthContributor;
import org.springframework.boot.health.contributor.ReactiveHealthIndicator;
import org.springframework.context.annotation.Bean;

/**
 * A health contributor named {@code workqueue}, with one {@link QueueHealthIndicator} per queue bean
 * (at {@code /actuator/health/workqueue/<queue bean>}), when Spring Boot's health support is present
 * and {@code management.health.workqueue.enabled} is not false. Backs off when the application
 * defines a bean named {@code workqueueHealthContributor}. Owns the {@code workqueue.health.*}
 * properties ({@link WorkQueueHealthProperties}).
 */
@AutoConfiguration(after = WorkQueueAutoConfiguration.class)
@ConditionalOnClass(ReactiveHealthIndicator.class)
@ConditionalOnBean(WorkQueueProperties.class)
@ConditionalOnEnabledHealthIndicator("workqueue")
@EnableConfigurationProperties(WorkQueueHealthProperties.class)
public class WorkQueueHealthAutoConfiguration {

    /** Creates the auto-configuration; Spring calls it. */
    public WorkQueueHealthAutoConfiguration() {}

    /**
     * The {@code workqueue} contributor: a queue's indicator is DOWN when its oldest ready item has
     * waited longer than its {@code health.max-oldest-ready-age}, or its database is unreachable.
     */
    @Bean
    @ConditionalOnMissingBean(name = "workqueueHealthContributor")
    CompositeReactiveHealthContributor workqueueHealthContributor(Map<String, ReactiveWorkQueue<?>> queues,
            WorkQueueProperties properties, WorkQueueHealthProperties health) {
        Map<String, ReactiveHealthIndicator> indicators = new LinkedHashMap<>();
        queues.forEach((bean, queue) -> indicators.put(bean, new QueueHealthIndicator(queue,
                QueueSettings.maxOldestReadyAgeOf(properties.getQueues().get(bean), health), health.getTimeout())));
        return CompositeReactiveHealthContributor.fromMap(indicators);
    }
}
