package io.workqueue.observation;

import io.micrometer.observation.Observation;
import io.micrometer.tracing.Link;
import io.micrometer.tracing.Span;
import io.micrometer.tracing.TraceContext;
import io.micrometer.tracing.Tracer;
import io.micrometer.tracing.handler.DefaultTracingObservationHandler;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * Makes the spans of a queue's observations ({@link WorkQueueObservationContext}) with Micrometer
 * Tracing: like {@link DefaultTracingObservationHandler}, plus what a queue needs. Each span
 * records its own trace context in the observation's context (a W3C {@code traceparent}, what a
 * queue that stores trace contexts keeps with an enqueue's keys), and links to the contexts its
 * observation names ({@link WorkQueueObservationContext#links()}): a handler's span to the
 * enqueues its item answers, a group-committed write's to its callers' enqueues. Handler and write
 * spans start new traces; the others are children of their parent observation's span.
 *
 * <p>Register it ahead of the default tracing handler, which would otherwise make these spans
 * without links (Spring Boot: the starter declares it as a bean ordered first; by hand: first in a
 * {@code FirstMatchingCompositeObservationHandler}). It handles only the queue's contexts.
 * Thread-safe; costs one span per observation, and one string per span for its trace context.
 * Span links need a tracer that keeps them: OpenTelemetry's does; Brave's has no links and keeps
 * them as tags.
 */
public class WorkQueueTracingObservationHandler extends DefaultTracingObservationHandler {
    /**
     * A handler making spans with {@code tracer}.
     *
     * @param tracer the application's tracer
     */
    public WorkQueueTracingObservationHandler(Tracer tracer) {
        super(tracer);
    }

    @Override
    public boolean supportsContext(Observation.Context context) {
        return context instanceof WorkQueueObservationContext;
    }

    @Override
    public void onStart(Observation.Context context) {
        WorkQueueObservationContext queueContext = (WorkQueueObservationContext) context;
        Span.Builder builder = getTracer().spanBuilder().name(getSpanName(context));
        Span parent = getParentSpan(context);
        boolean ownTrace = WorkQueueObservations.HANDLE.equals(queueContext.operation())
                || WorkQueueObservations.ENQUEUE_WRITE.equals(queueContext.operation());
        if (parent != null && !ownTrace) {
            builder.setParent(parent.context());
        } else {
            builder.setNoParent();
        }
        String operation = queueContext.operation();
        if (WorkQueueObservations.ENQUEUE.equals(operation)) {
            builder.kind(Span.Kind.PRODUCER);
        } else if (WorkQueueObservations.HANDLE.equals(operation)) {
            builder.kind(Span.Kind.CONSUMER);
        }
        for (String link : queueContext.links()) {
            TraceContext linked = parse(link);
            if (linked != null) {
                builder.addLink(new Link(linked));
            }
        }
        Span span = builder.start();
        getTracingContext(context).setSpan(span);
        queueContext.traceParent(format(span.context()));
    }

    /**
     * A W3C {@code traceparent} naming {@code context}: version 00, the trace id (a 64-bit one
     * padded to 128 bits, as the W3C format requires), the span id, and the sampled flag.
     */
    static String format(TraceContext context) {
        String traceId = context.traceId();
        if (traceId.length() < 32) {
            traceId = "0".repeat(32 - traceId.length()) + traceId;
        }
        return "00-" + traceId + "-" + context.spanId() + "-" + (Boolean.TRUE.equals(context.sampled()) ? "01" : "00");
    }

    /**
     * The trace context a stored {@code traceparent} names, or {@code null} when it is not one
     * (another format, or damaged): a link is a courtesy, never a reason to fail a handler.
     */
    @Nullable TraceContext parse(String traceParent) {
        String[] parts = traceParent.split("-");
        if (parts.length < 4 || parts[1].length() != 32 || parts[2].length() != 16 || parts[3].length() != 2
                || !hex(parts[1]) || !hex(parts[2]) || !hex(parts[3])) {
            return null;
        }
        boolean sampled = (Integer.parseInt(parts[3], 16) & 1) == 1;
        return getTracer().traceContextBuilder()
                .traceId(parts[1].toLowerCase(Locale.ROOT))
                .spanId(parts[2].toLowerCase(Locale.ROOT))
                .sampled(sampled)
                .build();
    }

    private static boolean hex(String text) {
        for (int i = 0; i < text.length(); i++) {
            if (Character.digit(text.charAt(i), 16) < 0) {
                return false;
            }
        }
        return true;
    }
}
