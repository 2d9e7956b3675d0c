package io.workqueue.spring.boot.autoconfigure;

import java.time.Duration;
import java.util.concurrent.TimeoutException;

/**
 * The tables of the configured queues could not be created or upgraded at startup
 * ({@code workqueue.schema.apply}): what {@link SchemaInitializer} throws, with the database's or
 * the network's failure as the cause, so that {@link SchemaApplyFailureAnalyzer} can say what went
 * wrong and what to do instead of a stack of bean-creation errors.
 */
final class WorkQueueSchemaException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** The table prefix whose table was being created. */
    private final String tablePrefix;

    /** How long applying was allowed to take ({@code workqueue.schema.timeout}). */
    private final Duration timeout;

    WorkQueueSchemaException(String tableName, String tablePrefix, Duration timeout, Throwable cause) {
        super("could not create or upgrade the work queue table " + tableName
                + (cause instanceof TimeoutException ? " within workqueue.schema.timeout (" + timeout + ")"
                        : ": " + cause.getMessage()), cause);
        this.tablePrefix = tablePrefix;
        this.timeout = timeout;
    }

    /** The table prefix whose table was being created. */
    String tablePrefix() {
        return tablePrefix;
    }

    /** How long applying was allowed to take. */
    Duration timeout() {
        return timeout;
    }
}
