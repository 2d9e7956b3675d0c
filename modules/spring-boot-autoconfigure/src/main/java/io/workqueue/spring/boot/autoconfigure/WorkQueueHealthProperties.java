package io.workqueue.spring.boot.autoconfigure;

import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.validation.Errors;
import org.springframework.validation.Validator;

/**
 * The {@code workqueue.health.*} properties, owned by {@link WorkQueueHealthAutoConfiguration}: the
 * defaults of the per-queue health indicators (a queue may set its own threshold under
 * {@code workqueue.queues.<name>.health}). A mutable JavaBean, as Spring Boot binds it, validated
 * when bound.
 */
@ConfigurationProperties(WorkQueueHealthProperties.PREFIX)
public class WorkQueueHealthProperties implements Validator {
    /** The prefix of every property here. */
    public static final String PREFIX = "workqueue.health";

    /** How long the oldest ready item may wait before its queue reports DOWN. */
    private Duration maxOldestReadyAge = Duration.ofMinutes(5);

    /** How long the check behind a queue's health may take before the queue reports DOWN. */
    private Duration timeout = Duration.ofSeconds(5);

    /** Creates the defaults; Spring binds the rest. */
    public WorkQueueHealthProperties() {}

    @Override
    public boolean supports(Class<?> type) {
        return WorkQueueHealthProperties.class.isAssignableFrom(type);
    }

    @Override
    public void validate(Object target, Errors errors) {
        WorkQueueHealthProperties health = (WorkQueueHealthProperties) target;
        PropertyChecks.requirePositive(errors, "maxOldestReadyAge", health.maxOldestReadyAge);
        PropertyChecks.requirePositive(errors, "timeout", health.timeout);
    }

    /** Default 5m. */
    public Duration getMaxOldestReadyAge() {
        return maxOldestReadyAge;
    }

    /** Sets {@link #getMaxOldestReadyAge()}. */
    public void setMaxOldestReadyAge(Duration maxOldestReadyAge) {
        this.maxOldestReadyAge = maxOldestReadyAge;
    }

    /** Default 5s. */
    public Duration getTimeout() {
        return timeout;
    }

    /** Sets {@link #getTimeout()}. */
    public void setTimeout(Duration timeout) {
        this.timeout = timeout;
    }
}
