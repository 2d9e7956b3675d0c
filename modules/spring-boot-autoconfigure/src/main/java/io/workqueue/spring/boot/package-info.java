/**
 * What a Spring Boot application declares to use reactive-workqueue through the starter: a
 * {@link io.workqueue.spring.boot.WorkQueueHandler} bean bound to a queue by
 * {@link io.workqueue.spring.boot.HandlesQueue}, and, when properties are not enough,
 * {@link io.workqueue.spring.boot.WorkQueueBuilderCustomizer} beans. The queues themselves come
 * from {@code workqueue.*} properties; see
 * {@link io.workqueue.spring.boot.autoconfigure.WorkQueueProperties}.
 */
@NullMarked
package io.workqueue.spring.boot;

import org.jspecify.annotations.NullMarked;
