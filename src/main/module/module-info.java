/**
 * A leased work queue over PostgreSQL for Project Reactor. Exports the API ({@code io.workqueue},
 * {@code io.workqueue.notify}, {@code io.workqueue.migrations}) and nothing else: the PostgreSQL
 * implementation is a service the API finds, not a package anyone imports.
 */
module io.workqueue {
    requires transitive org.reactivestreams;
    requires transitive reactor.core;
    requires transitive r2dbc.spi;
    requires transitive org.jspecify;
    requires static micrometer.core;
    requires static micrometer.observation;
    requires static micrometer.tracing;
    requires transitive r2dbc.postgresql;
    requires r2dbc.pool;
    requires transitive tools.jackson.databind;
    requires org.slf4j;

    exports io.workqueue;
    exports io.workqueue.notify;
    exports io.workqueue.migrations;
    exports io.workqueue.observation;
    // The DDL and the versioned scripts are resources a migration tool may read from the jar.
    opens io.workqueue.migrations;
    opens io.workqueue.migrations.versions;

    uses io.workqueue.WorkQueueBackend;
    provides io.workqueue.WorkQueueBackend with io.workqueue.postgres.PostgresBackend;
}
