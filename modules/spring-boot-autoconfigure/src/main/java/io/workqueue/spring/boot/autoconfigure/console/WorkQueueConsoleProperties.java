package io.workqueue.spring.boot.autoconfigure.console;

import io.workqueue.spring.boot.autoconfigure.PropertyChecks;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.validation.Errors;
import org.springframework.validation.Validator;

/**
 * The {@code workqueue.console.*} properties, owned by {@link WorkQueueConsoleAutoConfiguration}:
 * the web console (WebFlux applications with {@code reactive-workqueue-console} on the class path),
 * a page and a JSON API under {@link #getPath()} to see every queue, list its items by state and look
 * at one, and, only when {@link #isActionsEnabled()}, retry, remove and purge. A mutable JavaBean,
 * as Spring Boot binds it, validated when bound.
 */
@ConfigurationProperties(WorkQueueConsoleProperties.PREFIX)
public class WorkQueueConsoleProperties implements Validator {
    /** The prefix of every property here. */
    public static final String PREFIX = "workqueue.console";

    /** Whether to serve the console. Off by default: it shows every key and error of every queue. */
    private boolean enabled = false;

    /** Where the console is served: a path of letters, digits, '-', '_', '.' and '/'. */
    private String path = "/workqueue";

    /**
     * Whether the console may change anything (retry, remove, purge). Off by default; even on,
     * actions are accepted only as same-origin POSTs carrying the console's token.
     */
    private boolean actionsEnabled = false;

    /**
     * How old the queue list's stats may be before a view reads them again (in the background,
     * showing the previous read meanwhile): each is a stats read, which reads every pending row.
     */
    private Duration statsMaxAge = Duration.ofSeconds(5);

    @Override
    public boolean supports(Class<?> type) {
        return WorkQueueConsoleProperties.class.isAssignableFrom(type);
    }

    @Override
    public void validate(Object target, Errors errors) {
        WorkQueueConsoleProperties console = (WorkQueueConsoleProperties) target;
        if (console.path == null || !console.path.matches("(/[A-Za-z0-9._-]+)+")) {
            errors.rejectValue("path", "invalid", "must be '/' followed by segments of letters, digits, '.', '_'"
                    + " and '-', without a trailing '/', but was " + console.path);
        }
        PropertyChecks.requirePositive(errors, "statsMaxAge", console.statsMaxAge);
    }

    /** Default false. */
    public boolean isEnabled() {
        return enabled;
    }

    /** Sets {@link #isEnabled()}. */
    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    /** Default "/workqueue". */
    public String getPath() {
        return path;
    }

    /** Sets {@link #getPath()}. */
    public void setPath(String path) {
        this.path = path;
    }

    /** Default false. */
    public boolean isActionsEnabled() {
        return actionsEnabled;
    }

    /** Sets {@link #isActionsEnabled()}. */
    public void setActionsEnabled(boolean actionsEnabled) {
        this.actionsEnabled = actionsEnabled;
    }

    /** Default 5s. */
    public Duration getStatsMaxAge() {
        return statsMaxAge;
    }

    /** Sets {@link #getStatsMaxAge()}. */
    public void setStatsMaxAge(Duration statsMaxAge) {
        this.statsMaxAge = statsMaxAge;
    }
}
