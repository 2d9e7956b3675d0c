package io.workqueue.postgres;

import static io.workqueue.postgres.Rows.longValue;

import io.r2dbc.spi.Connection;
import io.workqueue.Item;
import io.workqueue.KeyCodec;
import io.workqueue.KeyDecodingException;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkerOptions;
import io.workqueue.internal.GroupCommit;
import io.workqueue.internal.QueueMetrics;
import io.workqueue.internal.Throwables;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/**
 * The queue's claims: merged into leasing statements (a group commit of their own), read from the
 * instance's claim cursors with looks behind them, dealt out in claim order, handed back when their
 * caller left, and cleared of keys the codec no longer decodes. Thread-safe.
 *
 * @param <K> the key type
 */
final class Leasing<K> {
    private static final Logger log = LoggerFactory.getLogger(Leasing.class);

    /** How many merged leasing statements one instance runs at once. */
    private static final int LEASING_STATEMENTS_IN_FLIGHT = 2;
    /**
     * How long a leasing statement runs before the second may start beside it. Claims take a few
     * milliseconds: one at a time, the claims that arrive meanwhile merge into the next, and
     * fewer statements step over each other's locked rows (docs/benchmarks/handler-scheduler/
     * batch-submit-7-rounds). A statement waiting on a lock is slow, and the second slot opens.
     */
    static final Duration LEASING_STATEMENT_SLOW_AFTER = Duration.ofMillis(50);
    /**
     * How long, after a leasing statement that filled several loops' claims, the next waits for
     * those loops to claim again (a loop whose claim came back short waits for work instead). A
     * worker whose handlers run on its own pool claims again from that pool's thread, a hand-off
     * after the answer; without the wait the first one back would go alone and the rest ride
     * another statement. Starts at once when they are all back.
     */
    static final Duration LEASING_REGROUP_WITHIN = Duration.ofMillis(1);
    private static final String[] NO_KEYS = new String[0];
    /**
     * A merged write completing at least this many keys for callers that allow it
     * ({@code process()}'s rounds) commits the completion in a statement of its own and then
     * claims, rather than doing both in one. A statement sees the table as it was when it began,
     * and a completion in front of the claim ages that view by its whole run: in a fleet, rows
     * another instance leased meanwhile still look due to the claim, which locks each and lets it
     * go (a lock, a dirtied page and a WAL record apiece). Apart, the claim's view starts after
     * the completion. Measured on the fleet benchmark's drain (docs/benchmarks/fleet/ANALYSIS.md,
     * "Completing apart from claiming"): four instances paid about a twelfth less server time per
     * item, one instance the same. A smaller completion is short, and the round trip the one
     * statement saves is then worth more. If the claim fails after the completion committed, the
     * worker's next round completes those keys again, which finds them completed and changes
     * nothing (as after a write timeout).
     */
    static final int COMPLETE_APART_FROM = 16;

    private final WorkQueueConfig config;
    private final KeyCodec<K> codec;
    private final Database database;
    private final Sql sql;
    private final KeyWriters writers;
    private final QueueMetrics metrics;
    private final ClaimCursors cursors;
    private final CursorLook look;
    private final GroupCommit<LeaseRequest, Leased<K>> leases;
    /** How many merged writes completed apart from their claim; for tests in this package. */
    final AtomicLong completedApart = new AtomicLong();

    /**
     * @param wake woken when a look finds something the claims reading from the cursors would
     *             not have handed out
     */
    Leasing(WorkQueueConfig config, KeyCodec<K> codec, Database database, Sql sql, KeyWriters writers,
            ClaimCursors cursors, QueueMetrics metrics, Scheduler timer, Runnable wake) {
        this.config = config;
        this.codec = codec;
        this.database = database;
        this.sql = sql;
        this.writers = writers;
        this.cursors = cursors;
        this.metrics = metrics;
        // Claims merge like writes: a leasing statement carries every claim that arrived while
        // others ran, so a process's loops never race each other over the same index entries and
        // each statement's fixed cost is shared (docs/benchmarks). A second may start once the
        // first has run LEASING_STATEMENT_SLOW_AFTER, so that one slow statement (a completion
        // waiting for a row lock, a slow commit) does not hold up every loop of the instance for
        // longer; in steady state the loops' claims meet in one. Only claims
        // asking for the same lease ride together. A statement every caller left is cancelled on
        // the server; the share of a caller that left a statement others still wait for is undone.
        this.leases = new GroupCommit<>(config.name(), "claim", this::leaseMerged,
                request -> Math.max(request.limit(), request.complete().length), config.maxWriteBatch(),
                config.writeTimeout(), timer, GroupCommit.WriteListener.NONE,
                // The claim loops log each failure themselves, with the retry they make of it.
                new GroupCommit.Policy<>((first, other) -> first.leaseMicros() == other.leaseMicros(), true,
                        this::handBack, LEASING_STATEMENTS_IN_FLIGHT, true, LEASING_STATEMENT_SLOW_AFTER,
                        LEASING_REGROUP_WITHIN, (request, leased) -> leased.items().size() >= request.limit()));
        this.look = new CursorLook(config.name(), cursors, this::lookBehindCursors, wake, metrics, System::nanoTime);
    }

    /** The look behind the claim cursors; for tests in this package. */
    CursorLook look() {
        return look;
    }

    /**
     * Leases up to {@code limit} due items (already capped by {@code maxClaimBatch}) for
     * {@code leaseMicros}, completing {@code complete} (encoded, distinct; empty for a plain claim)
     * first: in the same statement and transaction, or, if {@code mayCompleteApart} and the merged
     * write is large enough ({@link #completesApart}), in a statement of its own committed before
     * the claim runs.
     */
    Mono<List<Item<K>>> lease(String[] complete, int limit, long leaseMicros, boolean mayCompleteApart) {
        return leases.submit(new LeaseRequest(complete, limit, leaseMicros, mayCompleteApart)).map(Leased::items);
    }

    /** {@link #lease} completing nothing. */
    Mono<List<Item<K>>> lease(int limit, long leaseMicros) {
        return lease(NO_KEYS, limit, leaseMicros, false);
    }

    /**
     * One caller's part of a leasing statement: the items to lease, for how long, the keys to
     * complete first ({@link #NO_KEYS} for a plain claim), and whether that completion may commit
     * before the claim rather than with it.
     */
    record LeaseRequest(String[] complete, int limit, long leaseMicros, boolean mayCompleteApart) {}

    /**
     * Whether a merged write completing {@code keys} keys for {@code requests} completes them
     * apart: {@link #COMPLETE_APART_FROM} keys or more, and every caller that completes any allows
     * it ({@code completeAndClaim} promises its callers one statement and one transaction).
     */
    static boolean completesApart(List<LeaseRequest> requests, int keys) {
        return keys >= COMPLETE_APART_FROM
                && requests.stream().allMatch(request -> request.complete().length == 0 || request.mayCompleteApart());
    }

    /**
     * The leasing group commit's write: one statement for every caller's claim (limits added up,
     * which the group commit's weight keeps within {@code maxWriteBatch}) and, if any caller
     * completes keys, their completion first, in the same transaction, or committed just before
     * the claim when {@link #completesApart}. The leased items are dealt out in claim order, each
     * caller taking as many as it asked for.
     */
    private Mono<List<Leased<K>>> leaseMerged(List<LeaseRequest> requests) {
        int limit = 0;
        List<String[]> completes = new ArrayList<>(requests.size());
        for (LeaseRequest request : requests) {
            limit += request.limit();
            completes.add(request.complete());
        }
        String[] complete = MergedKeys.union(completes);
        long leaseMicros = requests.get(0).leaseMicros();
        // SKIP LOCKED can still wait, briefly, on a row whose updater is committing, while
        // holding rows locked in claim order rather than key order: a rare 40P01 is possible,
        // and a deadlocked claim leased nothing, so it is retried like a write.
        Mono<Leased<K>> write;
        if (complete.length == 0) {
            write = claimAlone(limit, leaseMicros);
        } else if (completesApart(requests, complete.length)) {
            // The complete group commit's write (lock-ordered, retried, counted), then the claim.
            write = writers.complete(complete).doOnSubscribe(s -> completedApart.incrementAndGet())
                    .then(claimAlone(limit, leaseMicros));
        } else {
            write = database.withRetries(leaseDue(sql.completeAndClaim, sql.completeAndClaimFromCursors, limit,
                    leaseMicros, s -> s.bind("keys", complete)));
        }
        return write.map(leased -> {
            metrics.completed(leased.completed());
            List<Leased<K>> shares = new ArrayList<>(requests.size());
            int from = 0;
            for (LeaseRequest request : requests) {
                int to = Math.min(leased.items().size(), from + request.limit());
                shares.add(leased.slice(from, to));
                from = to;
            }
            return shares;
        });
    }

    /** A claim that completes nothing, retried like a write. */
    private Mono<Leased<K>> claimAlone(int limit, long leaseMicros) {
        return database.withRetries(leaseDue(sql.claimDue, sql.claimFromCursors, limit, leaseMicros, s -> s));
    }

    /**
     * Undoes the claim of a share whose caller left before receiving it: nobody will run those
     * items, and letting their leases lapse would hold them back for a whole lease. The lease goes
     * back to what it was and the attempt is not counted. Runs in the background; if it fails the
     * leases lapse, which is what they would have done anyway.
     */
    private void handBack(Leased<K> share) {
        int n = share.items().size();
        if (n == 0) {
            return;
        }
        Integer[] attempts = new Integer[n];
        Integer[] priorLeases = new Integer[n];
        for (int i = 0; i < n; i++) {
            attempts[i] = share.items().get(i).attempts();
            priorLeases[i] = share.priorLeases().get(i);
        }
        writers.handBack(share.storedKeys().toArray(String[]::new), attempts, priorLeases)
                .subscribe(count -> log.debug("queue {}: handed back {} of {} items leased for a caller that left",
                                config.name(), count, n),
                        e -> log.warn("queue {}: handing back {} items leased for a caller that left failed; their"
                                + " leases will lapse", config.name(), n, e));
    }

    /**
     * Runs a claim (claim.sql's "claim" shape: queue, attempt limit, claim limit, lease, further
     * parameters bound by {@code bindRest}). It returns one row: the leased items as parallel
     * arrays in claim order, and the number of items it completed. The claim is {@code fromHead}
     * when the {@link ClaimCursors} plan a claim from the head, else {@code fromCursors} with the
     * bands and their cursors bound. Each claim also starts a look behind the cursors, in the
     * background, when one is due.
     */
    private Mono<Leased<K>> leaseDue(SqlStatement fromHead, SqlStatement fromCursors, int batch,
            long leaseMicros, UnaryOperator<SqlStatement.Bound> bindRest) {
        return Mono.defer(() -> {
            look.lookIfDue();
            long start = System.nanoTime();
            ClaimCursors.Plan plan = cursors.plan(start);
            return database.inConnection(connection -> {
                        SqlStatement.Bound statement = bindRest.apply((plan.fromHead() ? fromHead : fromCursors).on(connection)
                                .bind("queue", config.name())
                                .bind("attempt_limit", config.maxAttempts())
                                .bind("limit", batch)
                                .bind("lease", leaseMicros)
                                .bind("timed", metrics.timesItems()));
                        if (!plan.fromHead()) {
                            statement.bind("bands", plan.priorities())
                                    .bind("band_starts", plan.fromMicros())
                                    .bind("band_keys", plan.fromKeys());
                        }
                        return Flux.from(statement.execute())
                                .concatMap(result -> result.map((row, meta) -> {
                                    metrics.requeuedDuringLease(longValue(row.get("rearmed", Long.class)));
                                    // Per-item arrays cost client CPU to decode: only for meters that record them.
                                    if (metrics.timesItems()) {
                                        metrics.claimLags(row.get("waited_us", Long[].class));
                                        metrics.heldUntilCompletion(row.get("completed_held_us", Long[].class));
                                    }
                                    String[] unorderedKeys = row.get("keys", String[].class);
                                    ClaimedRows rows = ClaimedRows.inClaimOrder(unorderedKeys,
                                            row.get("priorities", Integer[].class), row.get("attempts", Integer[].class),
                                            row.get("prior_leases", Integer[].class), row.get("available_us", Long[].class));
                                    long nowMicros = longValue(row.get("now_us", Long.class));
                                    if (!Boolean.TRUE.equals(row.get("paused", Boolean.class))) {
                                        cursors.claimed(plan, batch, rows.priorities(), rows.availableMicros(), rows.keys(),
                                                nowMicros, System.nanoTime());
                                    }
                                    return leased(rows, longValue(row.get("completed", Long.class)),
                                            config.storeTraceContexts()
                                                    ? traceContexts(unorderedKeys, row.get("trace_contexts", String[].class))
                                                    : Map.of(),
                                            nowMicros);
                                }))
                                .single();
                    })
                    .doOnNext(leased -> metrics.claimed(leased.items().size() + leased.undecodable().size(),
                            (int) leased.items().stream().filter(Item::reclaimed).count(),
                            System.nanoTime() - start))
                    .flatMap(leased -> leased.undecodable().isEmpty()
                            ? Mono.just(leased)
                            : setAside(leased.undecodable()).thenReturn(leased));
        });
    }

    /**
     * One look behind the claim cursors ({@link CursorLook}): lookBehindCursors in a transaction of
     * its own, after lookSettings, on a connection of its own, timed from sending the statement to
     * its answer.
     */
    private Mono<CursorLook.Found> lookBehindCursors() {
        return database.inTransaction((Connection connection) -> Database.rowsUpdated(Sql.LOOK_SETTINGS.on(connection))
                .then(Mono.defer(() -> {
                    long sent = System.nanoTime();
                    return Flux.from(sql.lookBehindCursors.on(connection)
                                    .bind("queue", config.name())
                                    .bind("attempt_limit", config.maxAttempts())
                                    .execute())
                            .concatMap(result -> result.map((row, meta) -> {
                                Integer[] priorities = row.get("priorities", Integer[].class);
                                Long[] firstDue = row.get("first_due_us", Long[].class);
                                String[] firstDueKeys = row.get("first_due_keys", String[].class);
                                return new CursorLook.Found(priorities == null ? new Integer[0] : priorities,
                                        firstDue == null ? new Long[0] : firstDue,
                                        firstDueKeys == null ? new String[0] : firstDueKeys,
                                        longValue(row.get("now_us", Long.class)), System.nanoTime() - sent);
                            }))
                            .single();
                })));
    }

    /**
     * What a leasing statement returned: the items it leased and decoded, each with its key as
     * stored and the kind of lease it had before ({@link Sql#PRIOR_LEASE_NONE} and its siblings)
     * at the same position, the leased rows whose stored key the codec refused, and how many items
     * it completed.
     */
    private record Leased<K>(List<Item<K>> items, List<String> storedKeys, List<Integer> priorLeases,
            List<Undecodable> undecodable, long completed) {
        /** The items from {@code from} to {@code to}, as one caller's share: no undecodable rows, no count. */
        Leased<K> slice(int from, int to) {
            return new Leased<>(items.subList(from, to), storedKeys.subList(from, to), priorLeases.subList(from, to),
                    List.of(), 0);
        }
    }

    /** A leased row whose stored key the codec could not decode, and why. */
    private record Undecodable(String storedKey, int attempts, Throwable error) {}

    /**
     * Hands back leased rows whose keys no longer decode, so they never block the healthy items
     * leased with them: each is released after {@link WorkerOptions#exponentialBackoff} of its
     * attempts (so it also counts towards {@link WorkQueueConfig#maxAttempts()} and stalls, visible
     * in {@code stats().stalled}) with a last error naming the problem. A release that fails is
     * logged; the row's lease then lapses, with the same outcome later.
     */
    private Mono<Void> setAside(List<Undecodable> rows) {
        return Flux.fromIterable(rows)
                .concatMap(row -> {
                    log.warn("stored key {} on queue {} cannot be decoded by the queue's codec; releasing it with"
                            + " the error recorded: {}", row.storedKey(), config.name(), row.error().toString());
                    KeyDecodingException cause = new KeyDecodingException(row.storedKey(), row.error());
                    return writers.release(WorkerOptions.exponentialBackoff(row.attempts()), cause,
                            new String[] {row.storedKey()})
                            .onErrorResume(e -> {
                                log.warn("releasing undecodable key {} on queue {} failed; its lease will lapse",
                                        row.storedKey(), config.name(), e);
                                return Mono.empty();
                            });
                })
                .then();
    }

    /**
     * The trace contexts a claim returned, by stored key (the arrays are in the statement's order,
     * not claim order); empty when none of the items had any, as on a queue that stores none.
     */
    private static Map<String, List<String>> traceContexts(String @Nullable [] keys, String @Nullable [] contexts) {
        if (keys == null || contexts == null) {
            return Map.of();
        }
        Map<String, List<String>> byKey = null;
        for (int i = 0; i < contexts.length && i < keys.length; i++) {
            String stored = contexts[i];
            if (stored != null && !stored.isEmpty()) {
                if (byKey == null) {
                    byKey = new HashMap<>();
                }
                byKey.put(keys[i], List.of(stored.split(" ")));
            }
        }
        return byKey == null ? Map.of() : byKey;
    }

    /**
     * Decodes the keys of the rows a claim leased, setting aside those the codec refuses; each
     * item carries the trace contexts stored with it.
     */
    private Leased<K> leased(ClaimedRows rows, long completed, Map<String, List<String>> traceContexts,
            long claimedMicros) {
        String[] keys = rows.keys();
        Integer[] priorities = rows.priorities();
        Integer[] attempts = rows.attempts();
        Integer[] priorLeases = rows.priorLeases();
        if (keys.length == 0) {
            return new Leased<>(List.of(), List.of(), List.of(), List.of(), completed);
        }
        List<Item<K>> items = new ArrayList<>(keys.length);
        List<String> storedKeys = new ArrayList<>(keys.length);
        List<Integer> priors = new ArrayList<>(keys.length);
        List<Undecodable> undecodable = List.of();
        // The claim's now(), which it stored as each row's claimed_at: with attempts, the claim's name.
        Instant claimedAt = Instant.EPOCH.plus(claimedMicros, ChronoUnit.MICROS);
        for (int i = 0; i < keys.length; i++) {
            K key;
            try {
                key = Objects.requireNonNull(codec.decode(keys[i]), "the codec decoded the key as null");
            } catch (Throwable e) {
                if (Throwables.isJvmFatal(e)) {
                    throw e;
                }
                // Per item: one key a rolling deploy made unreadable must not strand its batch.
                if (undecodable.isEmpty()) {
                    undecodable = new ArrayList<>(1);
                }
                undecodable.add(new Undecodable(keys[i], attempts[i], e));
                continue;
            }
            Item<K> item = Item.of(key, priorities[i], attempts[i], priorLeases[i] == Sql.PRIOR_LEASE_LAPSED)
                    .withClaimedAt(claimedAt);
            List<String> traces = traceContexts.get(keys[i]);
            items.add(traces == null ? item : item.withTraceContexts(traces));
            storedKeys.add(keys[i]);
            priors.add(priorLeases[i]);
        }
        return new Leased<>(items, storedKeys, priors, undecodable, completed);
    }
}
