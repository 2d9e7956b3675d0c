package io.workqueue.observation;

import io.micrometer.observation.Observation;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The context of every observation a queue makes ({@link WorkQueueObservations}): which queue,
 * which operation, the trace contexts its span should link to, and, once a tracing handler has
 * started its span, that span's own trace context.
 *
 * <p>Made and mutated by the queue on the thread that starts the observation, read by handlers;
 * {@link #traceParent(String)} is for a tracing handler's {@code onStart}. Not thread-safe beyond
 * what the Observation API's hand-offs give.
 */
public final class WorkQueueObservationContext extends Observation.Context {
    private final String queue;
    private final String operation;
    private final List<String> links;
    private volatile @Nullable String traceParent;

    /**
     * A context for one observation.
     *
     * @param queue     the logical queue's name
     * @param operation the observation's name, one of {@link WorkQueueObservations}'
     * @param links     W3C {@code traceparent} values the span should link to (none: empty)
     */
    public WorkQueueObservationContext(String queue, String operation, List<String> links) {
        this.queue = Objects.requireNonNull(queue, "queue");
        this.operation = Objects.requireNonNull(operation, "operation");
        this.links = List.copyOf(links);
        setName(operation);
        setContextualName(operation.substring(operation.lastIndexOf('.') + 1) + " " + queue);
    }

    /**
     * The logical queue.
     *
     * @return its name
     */
    public String queue() {
        return queue;
    }

    /**
     * The operation observed.
     *
     * @return one of the names in {@link WorkQueueObservations}
     */
    public String operation() {
        return operation;
    }

    /**
     * What the span should link to: for {@link WorkQueueObservations#HANDLE}, the enqueues the item
     * answers ({@link io.workqueue.Item#traceContexts()}); for
     * {@link WorkQueueObservations#ENQUEUE_WRITE}, the enqueues of the callers riding it. A link,
     * not a parent: those traces may have ended long before, and there may be several.
     *
     * @return W3C {@code traceparent} values, possibly empty
     */
    public List<String> links() {
        return links;
    }

    /**
     * The trace context of this observation's span, as a tracing handler recorded it when the span
     * started: what a queue that stores trace contexts keeps with an enqueue's keys.
     *
     * @return a W3C {@code traceparent}, or {@code null} when no tracing handler recorded one
     */
    public @Nullable String traceParent() {
        return traceParent;
    }

    /**
     * Records the trace context of this observation's span; for tracing handlers.
     *
     * @param traceParent a W3C {@code traceparent} ({@code 00-<trace id>-<span id>-<flags>})
     */
    public void traceParent(String traceParent) {
        this.traceParent = Objects.requireNonNull(traceParent, "traceParent");
    }
}
