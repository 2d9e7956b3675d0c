package io.workqueue.spring.boot;

import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import org.reactivestreams.Publisher;

/**
 * The work a queue's items stand for, declared as a bean and bound to a queue with
 * {@link HandlesQueue}: the Spring Boot starter runs {@link ReactiveWorkQueue#process} with it from
 * application start to shutdown.
 *
 * <p>An item succeeds when the returned publisher completes (its elements are ignored) and is then
 * completed; it fails when the publisher signals an error, or when this method throws or returns
 * {@code null}, and is then released after the queue's configured back-off with the error recorded
 * as its last error. Either way the failure is the item's own: the worker goes on. A publisher
 * still running when the item's lease ends is cancelled, and the item is handed out again.
 *
 * <p>Called, and its publisher subscribed, as many at once as the queue's
 * {@code worker.concurrency}, by default on a pool of the worker's own with that many threads
 * (named {@code workqueue-<queue name>-<n>}), where blocking is allowed: a handler that blocks
 * holds only its own slot, never the database driver's threads, so enqueues, other queues and
 * health checks go on. {@code worker.handler-scheduler: driver} calls it on the driver's
 * event-loop threads instead (no hand-off; then it must never block, and a call holding such a
 * thread over 100 ms is logged at WARN naming this bean). Delivery is at-least-once, so the work
 * must be idempotent. Implementations must be thread-safe.
 *
 * @param <K> the queue's key type
 */
@FunctionalInterface
public interface WorkQueueHandler<K> {

    /** The work for {@code item}, cold: nothing should happen until it is subscribed. */
    Publisher<?> handle(Item<K> item);
}
