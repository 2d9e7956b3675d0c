package io.workqueue.internal;

import io.workqueue.Item;
import java.util.List;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Mono;

/**
 * Where a queue's operations are observed (io.workqueue.observation names the observations). The
 * default observes nothing and hands each operation through untouched, at no cost;
 * {@link MicrometerQueueObservations} makes Micrometer observations, and is the only class that
 * touches the Observation API, so the library runs without it on the classpath. Each method wraps
 * a cold publisher: the observation starts when it is subscribed and stops when it completes,
 * fails or is cancelled. Implementations are thread-safe.
 */
public interface QueueObservations {
    /** Observes nothing. */
    QueueObservations NONE = new QueueObservations() {};

    /**
     * One caller's enqueue of {@code entries} entries ({@code singleKey}: the stored key when it
     * names one). {@code work} is given the trace context of the enqueue's span, to store with the
     * keys, or {@code null} when there is none.
     */
    default Mono<Void> enqueue(int entries, @Nullable String singleKey, boolean transactional,
            Function<@Nullable String, Mono<Void>> work) {
        return work.apply(null);
    }

    /** One group-committed write of {@code keys} keys for {@code callers} callers, linking to {@code links}. */
    default Mono<Void> write(int callers, int keys, List<String> links, Mono<Void> work) {
        return work;
    }

    /** One claim of up to {@code limit} items. */
    default <T> Mono<List<T>> claim(int limit, Mono<List<T>> work) {
        return work;
    }

    /** One completion of {@code keys} (stored keys). */
    default <T> Mono<T> complete(String[] keys, Mono<T> work) {
        return work;
    }

    /** One release of {@code keys} (stored keys). */
    default Mono<Long> release(String[] keys, Mono<Long> work) {
        return work;
    }

    /**
     * {@code handler}, each run observed; {@code storedKey} gives an item's key as stored. The
     * default returns {@code handler} itself.
     */
    default <K> Function<Item<K>, ? extends Publisher<?>> handle(Function<Item<K>, ? extends Publisher<?>> handler,
            Function<K, String> storedKey) {
        return handler;
    }
}
