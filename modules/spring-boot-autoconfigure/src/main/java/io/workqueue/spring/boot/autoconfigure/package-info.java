/**
 * Spring Boot auto-configuration for reactive-workqueue: {@link
 * io.workqueue.spring.boot.autoconfigure.WorkQueueAutoConfiguration} (queues, listeners, schema,
 * workers, housekeeping, shutdown, metrics) and {@link
 * io.workqueue.spring.boot.autoconfigure.WorkQueueHealthAutoConfiguration} (health), configured by
 * {@link io.workqueue.spring.boot.autoconfigure.WorkQueueProperties}.
 */
@NullMarked
package io.workqueue.spring.boot.autoconfigure;

import org.jspecify.annotations.NullMarked;
