package io.workqueue.testing;

import io.workqueue.Item;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import reactor.core.publisher.Mono;

/**
 * Keys whose data keeps changing, the user's view of "an enqueue during a lease is never lost": a
 * version per key that the producer raises before it enqueues the key, and a handler that reads
 * the version when its run starts. Once the queue has drained, every key's newest version must
 * have been read by some run. Thread-safe.
 */
public final class ChangingKeys {
    private final List<String> keys = new ArrayList<>();
    private final Map<String, AtomicLong> version = new ConcurrentHashMap<>();
    private final Map<String, AtomicLong> newestRead = new ConcurrentHashMap<>();
    private final AtomicInteger runs = new AtomicInteger();

    /** {@code count} keys named {@code prefix + i}, none changed yet. */
    public ChangingKeys(String prefix, int count) {
        for (int i = 0; i < count; i++) {
            String key = prefix + i;
            keys.add(key);
            version.put(key, new AtomicLong());
            newestRead.put(key, new AtomicLong());
        }
    }

    /** Changes the data behind a random key and returns the key, to be enqueued next. */
    public String change(Random random) {
        String key = keys.get(random.nextInt(keys.size()));
        version.get(key).incrementAndGet();
        return key;
    }

    /** A run: reads the key's version when it starts, takes up to 7 ms, then succeeds. */
    public Mono<Void> render(Item<String> item) {
        return Mono.defer(() -> {
            newestRead.get(item.key()).accumulateAndGet(version.get(item.key()).get(), Math::max);
            runs.incrementAndGet();
            return Mono.delay(Duration.ofMillis(item.key().hashCode() & 7)).then();
        });
    }

    /** {@link #render} as a handler. */
    public Function<Item<String>, Mono<Void>> handler() {
        return this::render;
    }

    /** Keys whose newest change no run has read, with both versions. */
    public List<String> stale() {
        List<String> stale = new ArrayList<>();
        version.forEach((key, v) -> {
            if (newestRead.get(key).get() != v.get()) {
                stale.add(key + " newest " + v.get() + " read " + newestRead.get(key).get());
            }
        });
        return stale;
    }

    public int runs() {
        return runs.get();
    }

    public long changes() {
        return version.values().stream().mapToLong(AtomicLong::get).sum();
    }
}
