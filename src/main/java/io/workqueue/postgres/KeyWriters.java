package io.workqueue.postgres;

import static io.workqueue.postgres.Rows.longValue;

import io.workqueue.WorkQueueConfig;
import io.workqueue.internal.GroupCommit;
import io.workqueue.internal.QueueMetrics;
import io.workqueue.internal.base.Durations;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.function.UnaryOperator;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/**
 * The queue's writers that wait for row locks: complete and extend (group-committed), release,
 * snooze, remove, and
 * the hand-back of a claim nobody took. Every one takes its locks in primary-key order (writers.sql,
 * "lock_named"), so overlapping batches queue instead of deadlocking. Keys arrive encoded, vetted
 * and distinct. Thread-safe.
 */
final class KeyWriters {
    /** Last errors are bounded so one pathological exception message cannot bloat the table. */
    static final int MAX_ERROR_LENGTH = 1024;

    private final WorkQueueConfig config;
    private final Database database;
    private final Sql sql;
    private final QueueMetrics metrics;
    private final GroupCommit<String[], Long> completions;
    private final GroupCommit<Held, Set<String>> extensions;

    KeyWriters(WorkQueueConfig config, Database database, Sql sql, QueueMetrics metrics, Scheduler timer) {
        this.config = config;
        this.database = database;
        this.sql = sql;
        this.metrics = metrics;
        // Weighed by the keys a call names, before merging: what a write's size grows with.
        this.completions = new GroupCommit<>(config.name(), "complete", this::completeMerged,
                keys -> keys.length, config.maxWriteBatch(), config.writeTimeout(), timer,
                GroupCommit.WriteListener.NONE);
        this.extensions = new GroupCommit<>(config.name(), "extend", this::extendMerged,
                held -> held.keys().length, config.maxWriteBatch(), config.writeTimeout(), timer,
                GroupCommit.WriteListener.NONE);
    }

    /**
     * Leases a caller holds, named by their claims: the keys as stored, and at the same positions
     * the attempts and claimed_at (microseconds since the epoch) the claim gave each, with the
     * lease to extend them by (microseconds) or the delay to snooze them for.
     */
    record Held(String[] keys, Integer[] attempts, Long[] claimedMicros, long micros) {}

    /**
     * Extends the leases the caller still holds to now() + {@code held.micros()}, group-committed
     * with every other caller's extensions; emits the keys extended (those not among them were no
     * longer the caller's).
     */
    Mono<Set<String>> extend(Held held) {
        return held.keys().length == 0 ? Mono.just(Set.of()) : extensions.submit(held);
    }

    /**
     * The extend group commit's write: one lock-ordered statement for every caller's leases, each
     * with its own length. A lease two callers name with the same claim is extended by the longer.
     */
    private Mono<List<Set<String>>> extendMerged(List<Held> callers) {
        Map<String, Integer> at = new HashMap<>();
        List<String> keys = new ArrayList<>();
        List<Integer> attempts = new ArrayList<>();
        List<Long> claimed = new ArrayList<>();
        List<Long> leases = new ArrayList<>();
        int named = 0;
        for (Held held : callers) {
            named += held.keys().length;
            for (int i = 0; i < held.keys().length; i++) {
                String claim = held.keys()[i] + '\0' + held.attempts()[i] + '\0' + held.claimedMicros()[i];
                Integer seen = at.putIfAbsent(claim, keys.size());
                if (seen == null) {
                    keys.add(held.keys()[i]);
                    attempts.add(held.attempts()[i]);
                    claimed.add(held.claimedMicros()[i]);
                    leases.add(held.micros());
                } else if (leases.get(seen) < held.micros()) {
                    leases.set(seen, held.micros());
                }
            }
        }
        int asked = named;
        return writeReturningKeys(keys.toArray(String[]::new), sql.extendKeys, statement -> statement
                        .bind("attempts", attempts.toArray(Integer[]::new))
                        .bind("claimed_us", claimed.toArray(Long[]::new))
                        .bind("leases", leases.toArray(Long[]::new)))
                .map(extended -> {
                    List<Set<String>> perCaller = new ArrayList<>(callers.size());
                    long credited = 0;
                    for (Held held : callers) {
                        Set<String> mine = new HashSet<>();
                        for (String key : held.keys()) {
                            if (extended.contains(key)) {
                                mine.add(key);
                            }
                        }
                        credited += mine.size();
                        perCaller.add(mine);
                    }
                    metrics.extended(credited, asked - credited);
                    return perCaller;
                });
    }

    /**
     * Hands back the leases the caller still holds without counting their attempts: dropped, due
     * after {@code held.micros()}; emits the keys snoozed.
     */
    Mono<Set<String>> snooze(Held held) {
        return writeReturningKeys(held.keys(), sql.snoozeKeys, statement -> statement
                        .bind("attempts", held.attempts())
                        .bind("claimed_us", held.claimedMicros())
                        .bind("delay", held.micros()))
                .doOnNext(snoozed -> metrics.snoozed(snoozed.size()));
    }

    /** Completes the keys, group-committed with every other caller's; emits how many it completed. */
    Mono<Long> complete(String[] encoded) {
        return encoded.length == 0 ? Mono.just(0L) : completions.submit(encoded);
    }

    /**
     * The complete group commit's write: one lock-ordered statement for every caller's keys. Each
     * completed key is credited to the first caller that named it, so counts stay per call.
     */
    private Mono<List<Long>> completeMerged(List<String[]> callers) {
        String[] union = MergedKeys.union(callers);
        return database.withRetries(database.inConnection(connection -> Flux.from(sql.completeKeys.on(connection)
                                .bind("queue", config.name())
                                .bind("keys", union)
                                .bind("timed", metrics.timesItems())
                                .execute())
                        .concatMap(result -> result.map((row, meta) -> {
                            long count = longValue(row.get("completed", Long.class));
                            String[] some = row.get("completed_keys", String[].class);
                            metrics.requeuedDuringLease(longValue(row.get("rearmed", Long.class)));
                            if (metrics.timesItems()) {
                                metrics.heldUntilCompletion(row.get("completed_held_us", Long[].class));
                            }
                            // Null: every key named was completed (MergedKeys checks it against the count).
                            return MergedKeys.credit(callers, count, some == null ? null : new HashSet<>(Arrays.asList(some)));
                        }))
                        .single()))
                .doOnNext(counts -> metrics.completed(counts.stream().mapToLong(Long::longValue).sum()));
    }

    /** Releases the keys: lease dropped, available after {@code delay}, {@code cause} recorded. */
    Mono<Long> release(Duration delay, @Nullable Throwable cause, String[] encoded) {
        return Mono.defer(() -> {
            long delayMicros = Durations.micros(delay);
            String error = describe(cause);
            return write(encoded, sql.releaseKeys, statement -> statement
                    .bind("delay", delayMicros)
                    .bindNullable("last_error", error, String.class))
                    .doOnNext(metrics::released);
        });
    }

    /** Deletes the keys, whatever their state. */
    Mono<Long> remove(String[] encoded) {
        return Mono.defer(() -> write(encoded, sql.removeKeys, statement -> statement)).doOnNext(metrics::removed);
    }

    /**
     * Undoes a claim of the keys: each lease goes back to what it was before the claim
     * ({@code priorLeases}) and the attempt it gave ({@code attempts}) is not counted; only where
     * that claim is still the row's latest.
     */
    Mono<Long> handBack(String[] encoded, Integer[] attempts, Integer[] priorLeases) {
        return Mono.defer(() -> write(encoded, sql.handBackKeys,
                statement -> statement.bind("attempts", attempts).bind("prior_leases", priorLeases)));
    }

    /** Flushes the completions waiting for the group commit. */
    Mono<Void> flush() {
        return Mono.when(completions.flush(), extensions.flush());
    }

    /**
     * Runs one of the lock-ordered key writers: the queue, the keys, further parameters bound by
     * {@code bindRest}. The statement orders its own locks, so the client's order does not matter.
     */
    private Mono<Long> write(String[] encoded, SqlStatement statement, UnaryOperator<SqlStatement.Bound> bindRest) {
        if (encoded.length == 0) {
            return Mono.just(0L);
        }
        return database.withRetries(database.inConnection(connection -> Database.rowsUpdated(bindRest.apply(
                statement.on(connection).bind("queue", config.name()).bind("keys", encoded)))));
    }

    /**
     * {@link #write}, for a writer that returns the keys it changed ({@code RETURNING q.item_key}):
     * emits them.
     */
    private Mono<Set<String>> writeReturningKeys(String[] encoded, SqlStatement statement,
            UnaryOperator<SqlStatement.Bound> bindRest) {
        if (encoded.length == 0) {
            return Mono.just(Set.of());
        }
        return database.withRetries(database.inConnection(connection -> Flux.from(bindRest.apply(
                                statement.on(connection).bind("queue", config.name()).bind("keys", encoded)).execute())
                        .concatMap(result -> result.map((row, meta) -> row.get("item_key", String.class)))
                        .collect(Collectors.toSet())));
    }

    /** A cause as a last error: its message (or type), bounded, without NUL. */
    static @Nullable String describe(@Nullable Throwable cause) {
        if (cause == null) {
            return null;
        }
        String message;
        try {
            message = cause.getMessage();
        } catch (RuntimeException e) {
            message = null; // a hostile exception; its type still says something
        }
        if (message == null) {
            message = cause.getClass().getName();
        }
        // Bounded by code points so a surrogate pair is never split into an invalid string.
        if (message.codePointCount(0, message.length()) > MAX_ERROR_LENGTH) {
            message = message.substring(0, message.offsetByCodePoints(0, MAX_ERROR_LENGTH));
        }
        return message.replace('\0', '\uFFFD');
    }
}
