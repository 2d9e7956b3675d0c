package io.workqueue.internal;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.observation.contextpropagation.ObservationThreadLocalAccessor;
import io.workqueue.Item;
import io.workqueue.observation.WorkQueueObservationContext;
import io.workqueue.observation.WorkQueueObservations;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.SignalType;
import reactor.util.context.ContextView;

/**
 * {@link QueueObservations} over a Micrometer {@link ObservationRegistry}: the observations named
 * in {@link WorkQueueObservations}, each with a {@link WorkQueueObservationContext}. An operation's
 * observation starts at its subscription, is the current observation of its Reactor context (so
 * what it calls nests under it), and stops once, with its outcome, on completion, error or
 * cancellation. Thread-safe.
 */
public final class MicrometerQueueObservations implements QueueObservations {
    /** The Reactor context key of the current observation (inlined: names no context-propagation type). */
    private static final String CURRENT = ObservationThreadLocalAccessor.KEY;

    private final ObservationRegistry registry;
    private final String queue;

    private MicrometerQueueObservations(ObservationRegistry registry, String queue) {
        this.registry = Objects.requireNonNull(registry, "registry");
        this.queue = queue;
    }

    /**
     * Observations to {@code registry}, which must be an {@code ObservationRegistry}; typed
     * {@code Object} so that callers compile against no Micrometer type and load none until here.
     */
    public static QueueObservations forRegistry(Object registry, String queueName) {
        return new MicrometerQueueObservations((ObservationRegistry) registry, queueName);
    }

    /**
     * A new observation, not started. {@code newTrace}: it serves no single caller, so it has no
     * parent; else its parent is the current observation of {@code reactorContext}, or of the
     * thread.
     */
    private Observation observation(String name, List<String> links, boolean newTrace,
            @Nullable ContextView reactorContext) {
        WorkQueueObservationContext context = new WorkQueueObservationContext(queue, name, links);
        Observation observation = Observation.createNotStarted(name, () -> context, registry)
                .lowCardinalityKeyValue(WorkQueueObservations.QUEUE, queue);
        if (newTrace) {
            observation.parentObservation(null);
        } else if (reactorContext != null && reactorContext.hasKey(CURRENT)) {
            observation.parentObservation(reactorContext.get(CURRENT));
        }
        return observation;
    }

    /**
     * Runs {@code work}, given the started observation, under it: started at subscription, current
     * in the work's Reactor context, stopped once with its outcome.
     */
    private <T> Mono<T> observed(String name, List<String> links, boolean newTrace,
            Function<Observation, Observation> keyValues, Function<Observation, Mono<T>> work) {
        if (registry.isNoop()) {
            return Mono.defer(() -> work.apply(Observation.NOOP));
        }
        return Mono.deferContextual(reactorContext -> {
            Observation observation = keyValues.apply(observation(name, links, newTrace, reactorContext)).start();
            Mono<T> body;
            try {
                body = work.apply(observation);
            } catch (RuntimeException e) {
                stop(observation, e, SignalType.ON_ERROR);
                throw e;
            }
            // Stopped before the outcome reaches the subscriber: whoever waits for the operation
            // finds its observation ended (a span exported, a timer recorded).
            AtomicBoolean stopped = new AtomicBoolean();
            return body.doOnSuccess(value -> stopOnce(stopped, observation, null, SignalType.ON_COMPLETE))
                    .doOnError(error -> stopOnce(stopped, observation, error, SignalType.ON_ERROR))
                    .doOnCancel(() -> stopOnce(stopped, observation, null, SignalType.CANCEL))
                    .contextWrite(context -> context.put(CURRENT, observation));
        });
    }

    private static void stopOnce(AtomicBoolean stopped, Observation observation, @Nullable Throwable error,
            SignalType signal) {
        if (stopped.compareAndSet(false, true)) {
            stop(observation, error, signal);
        }
    }

    private static void stop(Observation observation, @Nullable Throwable error, SignalType signal) {
        if (error != null) {
            observation.error(error);
        }
        observation.lowCardinalityKeyValue(WorkQueueObservations.OUTCOME, switch (signal) {
            case ON_COMPLETE -> WorkQueueObservations.OUTCOME_SUCCESS;
            case ON_ERROR -> WorkQueueObservations.OUTCOME_FAILURE;
            default -> WorkQueueObservations.OUTCOME_CANCELLED;
        });
        observation.stop();
    }

    /** The key value of a count. */
    private static String count(long n) {
        return Long.toString(n);
    }

    @Override
    public Mono<Void> enqueue(int entries, @Nullable String singleKey, boolean transactional,
            Function<@Nullable String, Mono<Void>> work) {
        return observed(WorkQueueObservations.ENQUEUE, List.of(), false, observation -> {
            observation.lowCardinalityKeyValue(WorkQueueObservations.ENQUEUE_MODE,
                    transactional ? WorkQueueObservations.MODE_TRANSACTIONAL : WorkQueueObservations.MODE_GROUP);
            observation.highCardinalityKeyValue(WorkQueueObservations.ITEMS, count(entries));
            if (singleKey != null) {
                observation.highCardinalityKeyValue(WorkQueueObservations.KEY, singleKey);
            }
            return observation;
        }, observation -> work.apply(observation.getContext() instanceof WorkQueueObservationContext context
                ? context.traceParent() : null));
    }

    @Override
    public Mono<Void> write(int callers, int keys, List<String> links, Mono<Void> work) {
        return observed(WorkQueueObservations.ENQUEUE_WRITE, links, true, observation -> observation
                .highCardinalityKeyValue(WorkQueueObservations.ITEMS, count(keys))
                .highCardinalityKeyValue(WorkQueueObservations.CALLERS, count(callers)), observation -> work);
    }

    @Override
    public <T> Mono<List<T>> claim(int limit, Mono<List<T>> work) {
        return observed(WorkQueueObservations.CLAIM, List.of(), false,
                observation -> observation.highCardinalityKeyValue(WorkQueueObservations.ITEMS, count(limit)),
                observation -> work.doOnNext(items -> observation.highCardinalityKeyValue(
                        WorkQueueObservations.CLAIMED, count(items.size()))));
    }

    @Override
    public <T> Mono<T> complete(String[] keys, Mono<T> work) {
        return observed(WorkQueueObservations.COMPLETE, List.of(), false, observation -> keys(observation, keys),
                observation -> work);
    }

    @Override
    public Mono<Long> release(String[] keys, Mono<Long> work) {
        return observed(WorkQueueObservations.RELEASE, List.of(), false, observation -> keys(observation, keys),
                observation -> work);
    }

    private static Observation keys(Observation observation, String[] keys) {
        observation.highCardinalityKeyValue(WorkQueueObservations.ITEMS, count(keys.length));
        if (keys.length == 1) {
            observation.highCardinalityKeyValue(WorkQueueObservations.KEY, keys[0]);
        }
        return observation;
    }

    @Override
    public <K> Function<Item<K>, ? extends Publisher<?>> handle(Function<Item<K>, ? extends Publisher<?>> handler,
            Function<K, String> storedKey) {
        if (registry.isNoop()) {
            return handler;
        }
        Function<Item<K>, Publisher<?>> observed = item -> {
            Observation observation = observation(WorkQueueObservations.HANDLE, item.traceContexts(), true, null)
                    .highCardinalityKeyValue(WorkQueueObservations.KEY, storedKey.apply(item.key()))
                    .highCardinalityKeyValue(WorkQueueObservations.ATTEMPTS, count(item.attempts()))
                    .start();
            Publisher<?> work;
            // The handler's own observations, made while it assembles its work, nest under this one.
            Observation.Scope scope = observation.openScope();
            try {
                work = handler.apply(item);
            } catch (RuntimeException | Error e) {
                scope.close();
                stop(observation, e, SignalType.ON_ERROR);
                throw e;
            }
            scope.close();
            if (work == null) {
                // Failed, as the worker fails an item whose handler returns null.
                NullPointerException error = new NullPointerException("handler returned null");
                stop(observation, error, SignalType.ON_ERROR);
                return Flux.error(error);
            }
            AtomicBoolean stopped = new AtomicBoolean();
            return Flux.from(work)
                    .doOnComplete(() -> stopOnce(stopped, observation, null, SignalType.ON_COMPLETE))
                    .doOnError(error -> stopOnce(stopped, observation, error, SignalType.ON_ERROR))
                    .doOnCancel(() -> stopOnce(stopped, observation, null, SignalType.CANCEL))
                    .contextWrite(context -> context.put(CURRENT, observation));
        };
        // Named as the handler it wraps: the worker's warnings about a handler name the user's.
        return new Function<>() {
            @Override
            public Publisher<?> apply(Item<K> item) {
                return observed.apply(item);
            }

            @Override
            public String toString() {
                return handler.toString();
            }
        };
    }
}
