package io.workqueue.spring.boot.autoconfigure;

import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.bind.validation.BindValidationException;
import org.springframework.boot.context.properties.bind.validation.ValidationErrors;
import org.springframework.boot.context.properties.source.ConfigurationProperty;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.origin.Origin;
import org.springframework.core.Ordered;
import org.springframework.validation.FieldError;
import org.springframework.validation.ObjectError;

/**
 * Explains a start that failed because {@code workqueue.*} properties were refused by
 * {@link WorkQueueProperties}'s validation: for each, the property as written in configuration
 * ({@code workqueue.queues.tiles.max-claim-batch}, not the bean path), the value as written, where it
 * was written, and the library's reason, which says what is allowed
 * ({@code maxClaimBatch must be at least 1 but was 0}).
 *
 * <p>Ordered ahead of Spring Boot's own analysis of validation failures, which names the property by
 * its bean path and finds no origin for nested properties; it leaves every other validation
 * failure to that one. Registered in {@code META-INF/spring.factories}.
 */
final class PropertiesFailureAnalyzer extends AbstractFailureAnalyzer<BindValidationException> implements Ordered {
    private static final ConfigurationPropertyName PREFIX = ConfigurationPropertyName.of(WorkQueueProperties.PREFIX);

    @Override
    public int getOrder() {
        return Ordered.HIGHEST_PRECEDENCE;
    }

    @Override
    protected @Nullable FailureAnalysis analyze(Throwable rootFailure, BindValidationException failure) {
        ValidationErrors errors = failure.getValidationErrors();
        // WorkQueueProperties (workqueue) and the properties its auto-configurations own
        // (workqueue.console, workqueue.health).
        if (!errors.getName().equals(PREFIX) && !PREFIX.isAncestorOf(errors.getName())) {
            return null;
        }
        String prefix = errors.getName().toString();
        StringBuilder description = new StringBuilder("Invalid workqueue properties:\n");
        for (ObjectError error : errors.getAllErrors()) {
            description.append('\n');
            if (error instanceof FieldError field) {
                ConfigurationProperty bound = boundProperty(errors, prefix, field.getField());
                String name = bound != null ? bound.getName().toString() : propertyName(prefix, field.getField());
                Object value = bound != null ? bound.getValue() : field.getRejectedValue();
                Origin origin = bound != null ? Origin.from(bound) : null;
                description.append("    Property: ").append(name).append('\n');
                description.append("    Value: \"").append(value).append("\"\n");
                if (origin != null) {
                    description.append("    Origin: ").append(origin).append('\n');
                }
            }
            description.append("    Reason: ").append(error.getDefaultMessage()).append('\n');
        }
        return new FailureAnalysis(description.toString(),
                "Change each property above to a value its reason allows. Every workqueue property, with its "
                        + "default, is listed in the starter's README (\"Spring Boot\") and in your IDE's completion.",
                failure);
    }

    /** The property bound at the bean path {@code field}, if the configuration set it. */
    private static @Nullable ConfigurationProperty boundProperty(ValidationErrors errors, String prefix, String field) {
        ConfigurationPropertyName name = ConfigurationPropertyName.adapt(propertyName(prefix, field), '.');
        for (ConfigurationProperty property : errors.getBoundProperties()) {
            if (property.getName().equals(name)) {
                return property;
            }
        }
        return null;
    }

    /**
     * The property a bean path of properties bound at {@code prefix} is bound from:
     * {@code queues[tiles].maxClaimBatch} under {@code workqueue} is
     * {@code workqueue.queues.tiles.max-claim-batch}.
     */
    static String propertyName(String prefix, String field) {
        StringBuilder name = new StringBuilder(prefix);
        boolean inKey = false;
        boolean segmentStart = true;
        for (int i = 0; i < field.length(); i++) {
            char c = field.charAt(i);
            if (c == '[') {
                inKey = true;
                name.append('.');
            } else if (c == ']') {
                inKey = false;
            } else if (c == '.') {
                segmentStart = true;
            } else {
                if (segmentStart && !inKey) {
                    name.append('.');
                }
                segmentStart = false;
                if (!inKey && Character.isUpperCase(c)) {
                    name.append('-').append(Character.toLowerCase(c));
                } else {
                    name.append(inKey ? c : Character.toLowerCase(c));
                }
            }
        }
        return name.toString();
    }
}
