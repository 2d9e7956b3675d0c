package io.workqueue.postgres;

import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactory;
import io.workqueue.Entry;
import io.workqueue.Horizon;
import io.workqueue.Housekeeping;
import io.workqueue.Item;
import io.workqueue.KeyCodec;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.Stats;
import io.workqueue.UnsupportedDialectException;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkerOptions;
import io.workqueue.internal.Backoff;
import io.workqueue.internal.DemandPacedClaims;
import io.workqueue.internal.KeyVetting;
import io.workqueue.internal.Notifier;
import io.workqueue.internal.QueueMetrics;
import io.workqueue.internal.QueueObservations;
import io.workqueue.internal.WakeGate;
import io.workqueue.internal.Worker;
import io.workqueue.internal.WorkerRestarts;
import io.workqueue.internal.base.Durations;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/**
 * The PostgreSQL implementation of {@link ReactiveWorkQueue}: the facade over its parts, which
 * encodes and vets keys and hands each operation to the part that does it. Build it through
 * {@link ReactiveWorkQueue#builder}.
 *
 * <p>The parts: {@link Enqueuer} (the enqueue group commit, transactional enqueues, wakeup
 * notifications), {@link Leasing} (merged claims, claim cursors and the looks behind them,
 * hand-back), {@link KeyWriters} (complete, release, remove, all lock-ordered), {@link Upkeep}
 * (reap, stats, health, horizon, housekeeping), all running their statements through one
 * {@link Database}. Each operation borrows a connection from the factory for one statement and
 * returns it on completion, error and cancellation; with a pool, the enqueue group commit holds at
 * most one connection at a time. Thread-safe.
 *
 * @param <K> the key type
 */
public final class PostgresWorkQueue<K> implements ReactiveWorkQueue<K> {
    /** Last errors are bounded so one pathological exception message cannot bloat the table. */
    static final int MAX_ERROR_LENGTH = KeyWriters.MAX_ERROR_LENGTH;

    private final WorkQueueConfig config;
    private final KeyCodec<K> codec;
    private final Scheduler timer;
    private final ClaimCursors cursors = new ClaimCursors(System.nanoTime());
    private final WakeGate wakeGate;
    private final Enqueuer enqueuer;
    private final KeyWriters writers;
    private final Leasing<K> leasing;
    private final Upkeep upkeep;
    private final QueueObservations observations;

    private PostgresWorkQueue(ConnectionFactory connectionFactory, WorkQueueConfig config, KeyCodec<K> codec,
            @Nullable Publisher<?> wakeups, Scheduler timer, QueueMetrics metrics, QueueObservations observations) {
        this.config = config;
        this.observations = observations;
        this.codec = codec;
        this.timer = timer;
        Sql sql = new Sql(config.tablePrefix(), config.deleteOnComplete());
        Database database = Database.of(connectionFactory, timer, "queue " + config.name(), config.tablePrefix(),
                config.writeAttempts(), metrics::writeRetried);
        this.wakeGate = new WakeGate(wakeups, config.minWakeInterval(), timer);
        this.enqueuer = new Enqueuer(config, database, sql, cursors, metrics, observations, timer);
        this.writers = new KeyWriters(config, database, sql, metrics, timer);
        this.leasing = new Leasing<>(config, codec, database, sql, writers, cursors, metrics, timer, wakeGate::wake);
        this.upkeep = new Upkeep(config, database, sql, metrics);
    }

    /**
     * A queue over {@code connectionFactory}; see {@link io.workqueue.WorkQueueBuilder#build()}.
     *
     * @throws UnsupportedDialectException if the factory does not report PostgreSQL
     */
    static <K> PostgresWorkQueue<K> create(ConnectionFactory connectionFactory, WorkQueueConfig config,
            KeyCodec<K> codec, @Nullable Publisher<?> wakeups, Scheduler timer, QueueMetrics metrics) {
        return create(connectionFactory, config, codec, wakeups, timer, metrics, QueueObservations.NONE);
    }

    /**
     * A queue over {@code connectionFactory} whose operations are observed by {@code observations}.
     *
     * @throws UnsupportedDialectException if the factory does not report PostgreSQL
     */
    static <K> PostgresWorkQueue<K> create(ConnectionFactory connectionFactory, WorkQueueConfig config,
            KeyCodec<K> codec, @Nullable Publisher<?> wakeups, Scheduler timer, QueueMetrics metrics,
            QueueObservations observations) {
        Objects.requireNonNull(observations, "observations");
        Objects.requireNonNull(connectionFactory, "connectionFactory");
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(codec, "codec");
        Objects.requireNonNull(timer, "timer");
        Objects.requireNonNull(metrics, "metrics");
        Database.requirePostgres(connectionFactory);
        return new PostgresWorkQueue<>(connectionFactory, config, codec, wakeups, timer, metrics, observations);
    }

    @Override
    public String name() {
        return config.name();
    }

    @Override
    public WorkQueueConfig config() {
        return config;
    }

    /** The codec of this queue's keys, for the admin's listings. */
    KeyCodec<K> codec() {
        return codec;
    }

    /** Where this instance's claims start reading each band; for tests in this package. */
    ClaimCursors cursors() {
        return cursors;
    }

    /** The notifier of this instance's wakeups, {@code null} when it sends none; for tests in this package. */
    @Nullable Notifier notifier() {
        return enqueuer.notifier();
    }

    /** The look behind this instance's claim cursors; for tests in this package. */
    CursorLook look() {
        return leasing.look();
    }

    /** How many of {@code process()}'s merged writes completed apart from their claim; for tests in this package. */
    long completedApart() {
        return leasing.completedApart.get();
    }

    // ---------------------------------------------------------------- enqueue

    @Override
    public Mono<Void> enqueue(Collection<Entry<K>> entries) {
        return Mono.defer(() -> {
            List<EncodedEntry> encoded = encodeEntries(entries);
            return observations.enqueue(encoded.size(), singleKey(encoded), false,
                    traceContext -> enqueuer.enqueue(encoded, traceContext));
        });
    }

    @Override
    @SafeVarargs
    @SuppressWarnings("varargs") // the array is only read, through a list view
    public final Mono<Void> enqueue(Entry<K>... entries) {
        return enqueue(listView(entries));
    }

    @Override
    public Mono<Void> enqueueKeys(Collection<K> keys) {
        return Mono.defer(() -> enqueue(asEntries(keys)));
    }

    @Override
    @SafeVarargs
    @SuppressWarnings("varargs") // the array is only read, through a list view
    public final Mono<Void> enqueueKeys(K... keys) {
        return enqueueKeys(listView(keys));
    }

    @Override
    public Mono<Void> enqueue(Connection connection, Collection<Entry<K>> entries) {
        return enqueueOn(connection, entries, false);
    }

    @Override
    public Mono<Void> enqueueNotifyingInTransaction(Connection connection, Collection<Entry<K>> entries) {
        return enqueueOn(connection, entries, true);
    }

    private Mono<Void> enqueueOn(Connection connection, Collection<Entry<K>> entries, boolean inTransaction) {
        return Mono.defer(() -> {
            Objects.requireNonNull(connection, "connection");
            List<EncodedEntry> merged = EncodedEntry.merge(List.of(encodeEntries(entries)));
            return observations.enqueue(merged.size(), singleKey(merged), true,
                    traceContext -> enqueuer.enqueueOn(connection, merged, inTransaction, traceContext));
        });
    }

    /** The one key {@code entries} name, for the observation; {@code null} unless they name exactly one. */
    private static @Nullable String singleKey(List<EncodedEntry> entries) {
        return entries.size() == 1 ? entries.get(0).key() : null;
    }

    private List<EncodedEntry> encodeEntries(Collection<Entry<K>> entries) {
        Objects.requireNonNull(entries, "entries");
        List<EncodedEntry> encoded = new ArrayList<>(entries.size());
        for (Entry<K> entry : entries) {
            Objects.requireNonNull(entry, "entry");
            encoded.add(new EncodedEntry(KeyVetting.encode(codec, entry.key()), entry.priority(),
                    Durations.micros(entry.delay())));
        }
        return encoded;
    }

    /** Encodes and vets keys, dropping duplicates, so counts are of rows, not of arguments. */
    private String[] encodeDistinct(Collection<K> keys) {
        Objects.requireNonNull(keys, "keys");
        return keys.stream().map(key -> KeyVetting.encode(codec, key)).distinct().toArray(String[]::new);
    }

    private static <K> List<Entry<K>> asEntries(Collection<K> keys) {
        Objects.requireNonNull(keys, "keys");
        List<Entry<K>> entries = new ArrayList<>(keys.size());
        for (K key : keys) {
            entries.add(Entry.of(key));
        }
        return entries;
    }

    // ---------------------------------------------------------------- claim

    @Override
    public Mono<List<Item<K>>> claim(int limit, Duration lease) {
        return Mono.defer(() -> {
            Durations.requireLease(lease);
            int batch = batchSize(limit);
            return observations.claim(batch, leasing.lease(batch, Durations.micros(lease)));
        });
    }

    @Override
    public Mono<List<Item<K>>> completeAndClaim(Collection<K> completed, int limit, Duration lease) {
        return completeAndClaim(completed, limit, lease, false);
    }

    /**
     * {@code process()}'s rounds: {@link #completeAndClaim}, except that its write may complete in
     * a statement of its own and then claim ({@link Leasing#lease(String[], int, long, boolean)}):
     * the worker only needs the completion committed before the claim, not with it.
     */
    private Mono<List<Item<K>>> acknowledgeAndClaim(Collection<K> completed, int limit, Duration lease) {
        return completeAndClaim(completed, limit, lease, true);
    }

    private Mono<List<Item<K>>> completeAndClaim(Collection<K> completed, int limit, Duration lease,
            boolean mayCompleteApart) {
        return Mono.defer(() -> {
            Durations.requireLease(lease);
            String[] keys = encodeDistinct(completed);
            int batch = batchSize(limit);
            Mono<List<Item<K>>> claim = observations.claim(batch,
                    leasing.lease(keys, batch, Durations.micros(lease), mayCompleteApart));
            return keys.length == 0 ? claim : observations.complete(keys, claim);
        });
    }

    /** A claim's limit as the API reads it: at most {@code maxClaimBatch}, which is also what 0 or less means. */
    private int batchSize(int limit) {
        return limit <= 0 || limit > config.maxClaimBatch() ? config.maxClaimBatch() : limit;
    }

    @Override
    public Flux<Item<K>> claimStream(Duration lease, Duration poll) {
        return Flux.defer(() -> {
            Durations.requireLease(lease);
            Durations.requirePositive("poll", poll);
            return new DemandPacedClaims<>(config.name(), config.maxClaimBatch(),
                    want -> claim(want, lease), () -> awaitWork(poll),
                    Backoff.MIN, Backoff.MAX, lease, timer).flux();
        });
    }

    @Override
    public Flux<Item<K>> process(Function<Item<K>, ? extends Publisher<?>> handler, WorkerOptions options) {
        return Flux.defer(() -> {
            Objects.requireNonNull(handler, "handler");
            Objects.requireNonNull(options, "options");
            Function<Item<K>, ? extends Publisher<?>> observed = observations.handle(handler, codec::encode);
            return WorkerRestarts.of(options, config.name(), handler, timer, null,
                    stop -> new Worker<>(this, observed, options, timer, stop, this::acknowledgeAndClaim).flux());
        });
    }

    @Override
    public Flux<Item<K>> process(Function<Item<K>, ? extends Publisher<?>> handler, WorkerOptions options,
            Publisher<?> stop) {
        return Flux.defer(() -> {
            Objects.requireNonNull(handler, "handler");
            Objects.requireNonNull(options, "options");
            Objects.requireNonNull(stop, "stop");
            Function<Item<K>, ? extends Publisher<?>> observed = observations.handle(handler, codec::encode);
            return WorkerRestarts.of(options, config.name(), handler, timer, stop,
                    given -> new Worker<>(this, observed, options, timer, given, this::acknowledgeAndClaim).flux());
        });
    }

    // ---------------------------------------------------------------- lock-ordered writers

    @Override
    public Mono<Long> complete(Collection<K> keys) {
        return Mono.defer(() -> {
            String[] encoded = encodeDistinct(keys);
            return observations.complete(encoded, writers.complete(encoded));
        });
    }

    @Override
    @SafeVarargs
    @SuppressWarnings("varargs") // the array is only read, through a list view
    public final Mono<Long> complete(K... keys) {
        return complete(listView(keys));
    }

    @Override
    public Mono<Long> release(Duration delay, @Nullable Throwable cause, Collection<K> keys) {
        return Mono.defer(() -> {
            Objects.requireNonNull(delay, "delay");
            String[] encoded = encodeDistinct(keys);
            return observations.release(encoded, writers.release(delay, cause, encoded));
        });
    }

    @Override
    @SafeVarargs
    @SuppressWarnings("varargs") // the array is only read, through a list view
    public final Mono<Long> release(Duration delay, @Nullable Throwable cause, K... keys) {
        return release(delay, cause, listView(keys));
    }

    @Override
    public Mono<Set<K>> extend(Duration lease, Collection<Item<K>> items) {
        return Mono.defer(() -> {
            Durations.requireLease(lease);
            requireAtMostMax("lease", lease);
            Claims<K> claims = claims(items, Durations.micros(lease));
            return writers.extend(claims.held()).map(claims::decoded);
        });
    }

    @Override
    public Mono<Set<K>> snooze(Duration delay, Collection<Item<K>> items) {
        return Mono.defer(() -> {
            Durations.requireNotNegative("delay", delay);
            requireAtMostMax("delay", delay);
            Claims<K> claims = claims(items, Durations.micros(delay));
            return writers.snooze(claims.held()).map(claims::decoded);
        });
    }

    /** A duration past {@link #MAX_DURATION} is a mistake here, not a wish for "for ever". */
    private static void requireAtMostMax(String name, Duration value) {
        if (value.compareTo(MAX_DURATION) > 0) {
            throw new IllegalArgumentException(name + " must be at most " + MAX_DURATION + " (100 years), got " + value);
        }
    }

    /**
     * The claims {@code items} carry, encoded for the writers: each key as stored, with the attempts
     * and the claimed_at of the claim that handed it out, and {@code micros} (a lease or a delay);
     * an item named twice counts once.
     */
    private Claims<K> claims(Collection<Item<K>> items, long micros) {
        Objects.requireNonNull(items, "items");
        Map<String, Item<K>> byStored = new LinkedHashMap<>();
        for (Item<K> item : items) {
            Objects.requireNonNull(item, "item");
            if (item.claimedAt().isEmpty()) {
                throw new IllegalArgumentException("item " + item + " carries no claim (Item.claimedAt() is empty):"
                        + " only items a claim handed out can be extended or snoozed");
            }
            Item<K> other = byStored.putIfAbsent(KeyVetting.encode(codec, item.key()), item);
            if (other != null && !(other.attempts() == item.attempts() && other.claimedAt().equals(item.claimedAt()))) {
                throw new IllegalArgumentException("key " + item.key() + " is named by two different claims");
            }
        }
        String[] keys = byStored.keySet().toArray(String[]::new);
        Integer[] attempts = new Integer[keys.length];
        Long[] claimed = new Long[keys.length];
        for (int i = 0; i < keys.length; i++) {
            Item<K> item = Objects.requireNonNull(byStored.get(keys[i]));
            attempts[i] = item.attempts();
            claimed[i] = ChronoUnit.MICROS.between(Instant.EPOCH, item.claimedAt().orElseThrow());
        }
        return new Claims<>(new KeyWriters.Held(keys, attempts, claimed, micros), byStored);
    }

    /** Encoded claims for the writers, and the item each stored key stands for. */
    private record Claims<K>(KeyWriters.Held held, Map<String, Item<K>> byStored) {
        /** The caller's keys among {@code stored}, in the order the caller named them. */
        Set<K> decoded(Set<String> stored) {
            Set<K> keys = new LinkedHashSet<>();
            byStored.forEach((key, item) -> {
                if (stored.contains(key)) {
                    keys.add(item.key());
                }
            });
            return Collections.unmodifiableSet(keys);
        }
    }

    @Override
    public Mono<Long> remove(Collection<K> keys) {
        return Mono.defer(() -> writers.remove(encodeDistinct(keys)));
    }

    @Override
    @SafeVarargs
    @SuppressWarnings("varargs") // the array is only read, through a list view
    public final Mono<Long> remove(K... keys) {
        return remove(listView(keys));
    }

    // ---------------------------------------------------------------- maintenance and health

    @Override
    public Mono<Long> reap() {
        return upkeep.reap();
    }

    @Override
    public Mono<Stats> stats() {
        return upkeep.stats();
    }

    @Override
    public Mono<Housekeeping> housekeep(Duration lease) {
        return Mono.defer(() -> {
            Objects.requireNonNull(lease, "lease");
            return upkeep.housekeep(Durations.capped(Durations.requireLease(lease)), this::reapAll);
        });
    }

    @Override
    public Mono<Boolean> readyLongerThan(Duration threshold) {
        return Mono.defer(() -> {
            Durations.requireNotNegative("threshold", threshold);
            return upkeep.readyLongerThan(threshold);
        });
    }

    @Override
    public Mono<Horizon> horizon() {
        return upkeep.horizon();
    }

    @Override
    public Mono<Void> awaitWork(Duration poll) {
        return Mono.defer(() -> {
            Durations.requirePositive("poll", poll);
            return wakeGate.await(poll);
        });
    }

    @Override
    public Mono<Void> close() {
        // Merged completes are flushed too, but never refused: a worker may complete what it holds.
        Mono<Void> flushed = Mono.when(enqueuer.close(), writers.flush());
        // The last flush may have made a wakeup due: it goes out now rather than at the interval's end.
        Notifier notifier = enqueuer.notifier();
        return notifier == null ? flushed : flushed.then(Mono.defer(notifier::close));
    }

    /**
     * A view of a varargs array. A null array stays null, so that the method it is handed to
     * reports it at subscription like any other bad argument, rather than throwing here: the one
     * place a null crosses a parameter the types say is never null, on purpose.
     */
    @SuppressWarnings("NullAway")
    private static <T> List<T> listView(T[] array) {
        return array == null ? null : Arrays.asList(array);
    }
}
