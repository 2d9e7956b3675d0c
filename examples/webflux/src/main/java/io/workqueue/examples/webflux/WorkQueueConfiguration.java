package io.workqueue.examples.webflux;

import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.pool.ConnectionPoolConfiguration;
import io.r2dbc.spi.ConnectionFactories;
import io.r2dbc.spi.ConnectionFactory;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.examples.support.DemoDatabase;
import io.workqueue.migrations.WorkQueueMigrations;
import io.workqueue.notify.PgNotificationListener;
import java.io.IOException;
import java.time.Duration;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The queue and what it runs on.
 *
 * <p><b>Shutdown order.</b> Spring destroys a bean before the beans it depends on, so closing the
 * context first stops the {@link TileWorker} (a lifecycle bean: it stops claiming and lets in-flight
 * renders finish), then destroys, in this order: the queue (its {@code close()} flushes enqueues
 * still pending in the group commit and refuses later ones), the notification listener (its LISTEN
 * connection is closed), the pool, and last the database, which stops the embedded server if there
 * is one. The queue's and the listener's {@code close()} return a {@code Mono}; Spring subscribes to
 * a destroy method's publisher and waits for it to complete.
 */
@Configuration(proxyBeanMethods = false)
class WorkQueueConfiguration {
    private static final Logger log = LoggerFactory.getLogger(WorkQueueConfiguration.class);

    /** Where the database is, and the embedded server to stop, if it was started here. */
    record Database(String url, @Nullable DemoDatabase embedded) implements AutoCloseable {
        /** The server at {@code workqueue.r2dbc-url}, or else a freshly started embedded one. */
        static Database find(@Nullable String configuredUrl) {
            if (configuredUrl != null && !configuredUrl.isBlank()) {
                log.info("tile queue database: {} (workqueue.r2dbc-url)", configuredUrl);
                return new Database(configuredUrl, null);
            }
            // The property defaults to WORKQUEUE_R2DBC_URL, so that is unset too: DemoDatabase starts
            // an embedded PostgreSQL.
            DemoDatabase embedded = DemoDatabase.start();
            log.info("tile queue database: {}", embedded.description());
            return new Database(embedded.url(), embedded);
        }

        /** A non-pooled factory: what the pool wraps, and what the listener needs. */
        ConnectionFactory plainFactory() {
            return ConnectionFactories.get(url);
        }

        @Override
        public void close() throws IOException {
            if (embedded != null) {
                embedded.close();
            }
        }
    }

    @Bean(destroyMethod = "close")
    Database database(WorkQueueProperties properties) {
        return Database.find(properties.r2dbcUrl());
    }

    @Bean(destroyMethod = "dispose")
    ConnectionPool connectionPool(Database database, WorkQueueProperties properties) {
        return new ConnectionPool(ConnectionPoolConfiguration.builder(database.plainFactory())
                .maxSize(properties.poolSize())
                .maxAcquireTime(Duration.ofSeconds(30))
                .build());
    }

    /**
     * One LISTEN connection, outside the pool: a pooled connection would go back to the pool still
     * listening. Nothing connects until the queue first waits for work.
     */
    @Bean(destroyMethod = "close")
    PgNotificationListener notificationListener(Database database, WorkQueueProperties properties) {
        return PgNotificationListener.builder(database.plainFactory())
                .channel(properties.notifyChannel())
                .build();
    }

    /**
     * The tile queue. Creates its table first (idempotent), blocking once at startup, before anything
     * can enqueue or claim. Every enqueue notifies {@code notifyChannel}, and the listener's wakeups
     * end idle workers' waits early, so a tile posted to an idle service is claimed at once instead
     * of at the next poll.
     */
    @Bean(destroyMethod = "close")
    ReactiveWorkQueue<TileKey> tileQueue(ConnectionPool connectionPool, PgNotificationListener notificationListener,
            WorkQueueProperties properties) {
        WorkQueueMigrations.apply(connectionPool, properties.tablePrefix()).block(Duration.ofSeconds(30));
        return ReactiveWorkQueue.builder(connectionPool, TileKey.class)
                .config(WorkQueueConfig.builder(properties.queueName())
                        .tablePrefix(properties.tablePrefix())
                        .notifyChannel(properties.notifyChannel())
                        .build())
                .wakeups(notificationListener.wakeups())
                .build();
    }
}
