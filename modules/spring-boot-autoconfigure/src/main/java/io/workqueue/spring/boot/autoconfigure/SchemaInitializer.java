package io.workqueue.spring.boot.autoconfigure;

import io.workqueue.migrations.WorkQueueMigrations;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.InitializingBean;
import reactor.core.Exceptions;

/**
 * Creates or upgrades the table of every configured queue at startup, when
 * {@code workqueue.schema.apply} is set: {@link WorkQueueMigrations#apply} once per distinct table
 * prefix. It blocks the starting thread (never a Reactor thread) until the tables are ready, at most
 * {@code workqueue.schema.timeout}, and a failure fails the application's start (a
 * {@link WorkQueueSchemaException}, which {@link SchemaApplyFailureAnalyzer} explains): a service
 * whose tables cannot be created should not take requests.
 */
final class SchemaInitializer implements InitializingBean {
    private static final Logger log = LoggerFactory.getLogger(SchemaInitializer.class);

    private final WorkQueueProperties properties;
    private final WorkQueueConnectionFactories connections;

    SchemaInitializer(WorkQueueProperties properties, WorkQueueConnectionFactories connections) {
        this.properties = properties;
        this.connections = connections;
    }

    @Override
    public void afterPropertiesSet() {
        Set<String> prefixes = new LinkedHashSet<>();
        properties.getQueues().values().forEach(queue -> prefixes.add(QueueSettings.tablePrefixOf(properties, queue)));
        Duration timeout = properties.getSchema().getTimeout();
        for (String prefix : prefixes) {
            try {
                // timeout() rather than block(timeout), so that running out of time is a
                // TimeoutException the failure analysis can tell from a database error.
                WorkQueueMigrations.apply(connections.statements(), prefix).timeout(timeout).block();
            } catch (RuntimeException e) {
                Throwable cause = Exceptions.unwrap(e);
                throw new WorkQueueSchemaException(WorkQueueMigrations.tableName(prefix), prefix, timeout, cause);
            }
            log.info("work queue table {} is at schema version {}", WorkQueueMigrations.tableName(prefix),
                    WorkQueueMigrations.SCHEMA_VERSION);
        }
    }
}
