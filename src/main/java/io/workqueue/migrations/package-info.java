/**
 * The schema of the queue table, for applying it at start-up or handing it to a migration tool:
 * {@link io.workqueue.migrations.WorkQueueMigrations}.
 */
@NullMarked
package io.workqueue.migrations;

import org.jspecify.annotations.NullMarked;
