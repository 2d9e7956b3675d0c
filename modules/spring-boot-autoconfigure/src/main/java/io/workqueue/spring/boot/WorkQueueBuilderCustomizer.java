package io.workqueue.spring.boot;

import io.workqueue.WorkQueueBuilder;

/**
 * Adjusts the builder of each queue the Spring Boot starter creates, after the starter has applied
 * the queue's properties, its wakeups, its key codec (the library's default, writing JSON keys
 * through the application's {@code JsonMapper} when there is one) and (when Micrometer is present)
 * the application's {@code MeterRegistry}, and before it builds the queue. For what properties
 * cannot say, such as a {@link io.workqueue.KeyCodec} of your own, which replaces the starter's:
 *
 * <pre>{@code
 * @Bean
 * WorkQueueBuilderCustomizer tileCodec() {
 *     return (queueBean, builder) -> {
 *         if (queueBean.equals("tiles")) {
 *             ((WorkQueueBuilder<TileKey>) builder).keyCodec(new TileKeyCodec());
 *         }
 *     };
 * }
 * }</pre>
 *
 * <p>Called once per queue, on the thread creating the queue bean (at application start), in the
 * order of {@link org.springframework.core.Ordered} / {@code @Order}. A customizer that throws fails
 * the application's start.
 */
@FunctionalInterface
public interface WorkQueueBuilderCustomizer {

    /**
     * Customizes the builder of the queue bean named {@code queueBean}; its key type is the one
     * configured under {@code workqueue.queues.<queueBean>.key-type}.
     */
    void customize(String queueBean, WorkQueueBuilder<?> builder);
}
