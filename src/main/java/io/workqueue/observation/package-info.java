/**
 * Observations of a queue through Micrometer's Observation API: one instrumentation that yields
 * timers (with a meter handler) and spans (with a tracing handler). {@link WorkQueueObservations}
 * names them; {@link WorkQueueObservationContext} is the context they carry;
 * {@link WorkQueueTracingObservationHandler} makes their spans, linking a handler's span to the
 * requests that enqueued its item. Micrometer Observation (and, for the handler, Micrometer
 * Tracing) are optional dependencies: nothing here is loaded unless the queue is given an
 * {@code ObservationRegistry}.
 */
@NullMarked
package io.workqueue.observation;

import org.jspecify.annotations.NullMarked;
