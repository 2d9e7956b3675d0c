package io.workqueue.spring.boot;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Binds a {@link WorkQueueHandler} bean to the queue it handles: put it on the {@code @Bean} method
 * or on the {@code @Component} class. The value names the queue bean, which for a queue configured
 * under {@code workqueue.queues.<name>} is {@code <name>}.
 *
 * <p>The binding is checked at startup: a handler bean without this annotation, one naming a queue
 * bean that does not exist, two handlers bound to one queue, or a handler whose key type the queue's
 * keys are not, each fail the application's start with a message naming the bean.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.METHOD, ElementType.TYPE})
public @interface HandlesQueue {

    /** The name of the queue bean this handler works for. */
    String value();
}
