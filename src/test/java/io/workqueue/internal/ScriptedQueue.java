package io.workqueue.internal;

import io.r2dbc.spi.Connection;
import io.workqueue.Entry;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.Stats;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkerOptions;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/**
 * An in-memory stand-in for the queue a {@link Worker} drives, for unit tests of the worker's own
 * logic on virtual time: it hands out scripted keys, records every acknowledgement and release,
 * and fails the statements the test scripts to fail. Each key is handed out once; a released key
 * is recorded, not handed out again. Not thread-safe beyond what the worker needs: the worker runs
 * at most one round at a time; a test whose handlers run on the worker's pool reads the recorded
 * lists while holding the queue's lock.
 */
final class ScriptedQueue implements ReactiveWorkQueue<String> {
    /** One release the worker asked for. */
    record Release(String key, Duration delay, @Nullable Throwable cause) {}

    private final Scheduler timer;
    private final Deque<String> available = new ArrayDeque<>();
    /** Failures for the next rounds (completeAndClaim or complete), in order; null = succeed. */
    final Deque<@Nullable Throwable> roundFailures = new LinkedList<>(); // LinkedList: null is an element
    final List<String> completed = new ArrayList<>();
    final List<String> claimed = new ArrayList<>();
    final List<Release> released = new ArrayList<>();
    final List<Integer> claimLimits = new ArrayList<>();
    /**
     * How many of the next rounds never answer, as on a half-open connection: they record nothing,
     * and count in {@link #abandoned} when the worker gives up on them.
     */
    int hangingRounds;
    int abandoned;
    /** How long each completeAndClaim takes, on the queue's timer; zero answers at once. */
    Duration roundDelay = Duration.ZERO;
    int rounds;
    int completeCalls;
    private final Map<String, Integer> attempts = new HashMap<>();

    private final String name;

    ScriptedQueue(Scheduler timer, Collection<String> keys) {
        this(timer, "scripted", keys);
    }

    /** A queue named {@code name}, which the worker's pool threads are named after. */
    ScriptedQueue(Scheduler timer, String name, Collection<String> keys) {
        this.timer = timer;
        this.name = name;
        available.addAll(keys);
    }

    synchronized void add(Collection<String> keys) {
        available.addAll(keys);
    }

    synchronized int remaining() {
        return available.size();
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public WorkQueueConfig config() {
        return WorkQueueConfig.builder(name()).build();
    }

    @Override
    public Mono<List<Item<String>>> completeAndClaim(Collection<String> keys, int limit, Duration lease) {
        return Mono.defer(() -> {
            synchronized (this) {
                rounds++;
                if (hangingRounds > 0) {
                    return hang();
                }
                Throwable failure = roundFailures.poll();
                if (failure != null) {
                    return Mono.error(failure);
                }
                completed.addAll(keys);
                claimLimits.add(limit);
                List<Item<String>> items = new ArrayList<>();
                while (items.size() < limit && !available.isEmpty()) {
                    String key = available.poll();
                    int n = attempts.merge(key, 1, Integer::sum);
                    claimed.add(key);
                    items.add(Item.of(key, 0, n, false));
                }
                return roundDelay.isZero() ? Mono.just(items) : Mono.delay(roundDelay, timer).thenReturn(items);
            }
        });
    }

    @Override
    public Mono<Long> complete(Collection<String> keys) {
        return Mono.defer(() -> {
            synchronized (this) {
                rounds++;
                completeCalls++;
                if (hangingRounds > 0) {
                    return hang();
                }
                Throwable failure = roundFailures.poll();
                if (failure != null) {
                    return Mono.error(failure);
                }
                completed.addAll(keys);
                return Mono.just((long) keys.size());
            }
        });
    }

    private <T> Mono<T> hang() {
        hangingRounds--;
        return Mono.<T>never().doOnCancel(() -> {
            synchronized (this) {
                abandoned++;
            }
        });
    }

    @Override
    public Mono<Long> release(Duration delay, @Nullable Throwable cause, Collection<String> keys) {
        return Mono.fromCallable(() -> {
            synchronized (this) {
                keys.forEach(key -> released.add(new Release(key, delay, cause)));
                return (long) keys.size();
            }
        });
    }

    @Override
    public Mono<Void> awaitWork(Duration poll) {
        return Mono.delay(poll, timer).then();
    }

    @Override
    public Flux<Item<String>> process(Function<Item<String>, ? extends Publisher<?>> handler, WorkerOptions options) {
        return new Worker<>(this, handler, options, timer).flux();
    }

    @Override
    public Flux<Item<String>> process(Function<Item<String>, ? extends Publisher<?>> handler, WorkerOptions options,
            Publisher<?> stop) {
        return new Worker<>(this, handler, options, timer, stop).flux();
    }

    // ---------------------------------------------------------------- not used by the worker

    @Override
    public Mono<Void> enqueue(Collection<Entry<String>> entries) {
        throw new UnsupportedOperationException();
    }

    @Override
    @SuppressWarnings("unchecked")
    public Mono<Void> enqueue(Entry<String>... entries) {
        throw new UnsupportedOperationException();
    }

    @Override
    public Mono<Void> enqueueKeys(Collection<String> keys) {
        throw new UnsupportedOperationException();
    }

    @Override
    public Mono<Void> enqueueKeys(String... keys) {
        throw new UnsupportedOperationException();
    }

    @Override
    public Mono<Void> enqueue(Connection connection, Collection<Entry<String>> entries) {
        throw new UnsupportedOperationException();
    }

    @Override
    public Mono<List<Item<String>>> claim(int limit, Duration lease) {
        throw new UnsupportedOperationException();
    }

    @Override
    public Flux<Item<String>> claimStream(Duration lease, Duration poll) {
        throw new UnsupportedOperationException();
    }

    @Override
    public Mono<Long> complete(String... keys) {
        return complete(List.of(keys));
    }

    @Override
    public Mono<Long> release(Duration delay, @Nullable Throwable cause, String... keys) {
        return release(delay, cause, List.of(keys));
    }

    @Override
    public Mono<Long> remove(Collection<String> keys) {
        throw new UnsupportedOperationException();
    }

    @Override
    public Mono<Long> remove(String... keys) {
        throw new UnsupportedOperationException();
    }

    @Override
    public Mono<Long> reap() {
        throw new UnsupportedOperationException();
    }

    @Override
    public Mono<Stats> stats() {
        throw new UnsupportedOperationException();
    }

    @Override
    public Mono<io.workqueue.Horizon> horizon() {
        throw new UnsupportedOperationException();
    }

    @Override
    public Mono<Void> close() {
        return Mono.empty();
    }
}
