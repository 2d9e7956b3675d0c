package io.workqueue.postgres;

import static io.workqueue.postgres.Rows.intValue;
import static io.workqueue.postgres.Rows.longValue;
import static io.workqueue.postgres.Rows.ofMicros;

import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactory;
import io.r2dbc.spi.Result;
import io.r2dbc.spi.Statement;
import io.workqueue.Entry;
import io.workqueue.Horizon;
import io.workqueue.Housekeeping;
import io.workqueue.Item;
import io.workqueue.KeyCodec;
import io.workqueue.KeyDecodingException;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.Stats;
import io.workqueue.UnsupportedDialectException;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkQueueException;
import io.workqueue.WorkerOptions;
import io.workqueue.internal.Backoff;
import io.workqueue.internal.DemandPacedClaims;
import io.workqueue.internal.base.Durations;
import io.workqueue.internal.GroupCommit;
import io.workqueue.internal.KeyVetting;
import io.workqueue.internal.Notifier;
import io.workqueue.internal.QueueMetrics;
import io.workqueue.internal.SqlStates;
import io.workqueue.internal.Throwables;
import io.workqueue.internal.WakeGate;
import io.workqueue.internal.Worker;
import io.workqueue.migrations.WorkQueueMigrations;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.UnaryOperator;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.util.retry.Retry;

/**
 * The PostgreSQL implementation of {@link ReactiveWorkQueue}. Build it through
 * {@link ReactiveWorkQueue#builder}; {@link #create} is public only so that the builder in the API
 * package can reach it.
 *
 * <p>Each operation borrows a connection from the factory for one statement and returns it on
 * completion, error and cancellation; with a pool, the group commit holds at most one connection
 * at a time. Thread-safe.
 *
 * @param <K> the key type
 */
public final class PostgresWorkQueue<K> implements ReactiveWorkQueue<K> {
    private static final Logger log = LoggerFactory.getLogger(PostgresWorkQueue.class);

    /** Last errors are bounded so one pathological exception message cannot bloat the table. */
    static final int MAX_ERROR_LENGTH = 1024;
    /** The least time between two WARNs about a held horizon from one instance. */
    private static final Duration HORIZON_WARNING_INTERVAL = Duration.ofMinutes(1);
    /** How many merged leasing statements one instance runs at once. */
    private static final int LEASING_STATEMENTS_IN_FLIGHT = 2;

    private final ConnectionFactory connectionFactory;
    private final WorkQueueConfig config;
    private final KeyCodec<K> codec;
    private final Scheduler timer;
    private final Sql sql;
    private final GroupCommit<List<EncodedEntry>, Void> enqueues;
    private final GroupCommit<String[], Long> completions;
    private final GroupCommit<LeaseRequest, Leased<K>> leases;
    private final WakeGate wakeGate;
    /** Sends this instance's wakeup notifications; {@code null} when its enqueues send none. */
    private final @Nullable Notifier notifier;
    private final QueueMetrics metrics;
    private final ClaimCursors cursors = new ClaimCursors(System.nanoTime());
    private final CursorLook look;
    /** {@code System.nanoTime()} of the last horizon WARN; 0 before the first. */
    private final AtomicLong lastHorizonWarning = new AtomicLong();
    /** This instance's name as a housekeeper: unique per instance, readable by an operator. */
    private final String keeperName = keeperName();

    private PostgresWorkQueue(ConnectionFactory connectionFactory, WorkQueueConfig config, KeyCodec<K> codec,
            @Nullable Publisher<?> wakeups, Scheduler timer, QueueMetrics metrics) {
        this.connectionFactory = connectionFactory;
        this.config = config;
        this.codec = codec;
        this.timer = timer;
        this.metrics = metrics;
        this.sql = new Sql(config.tablePrefix(), config.deleteOnComplete());
        this.notifier = config.notifyOnEnqueue() && !config.notifyChannel().isEmpty()
                ? new Notifier(config.name(), new NotifyChannel(), config.minWakeInterval(), timer, metrics::notified)
                : null;
        // Both weigh a call by the keys it names, before merging: that is what a write's size
        // grows with, and it is known without merging.
        this.enqueues = new GroupCommit<>(config.name(), "enqueue", GroupCommit.withoutResults(this::writeMerged),
                List::size, config.maxWriteBatch(), config.writeTimeout(), timer, metrics::flushEnded);
        this.completions = new GroupCommit<>(config.name(), "complete", this::completeMerged,
                keys -> keys.length, config.maxWriteBatch(), config.writeTimeout(), timer,
                GroupCommit.WriteListener.NONE);
        // Claims merge the same way: a leasing statement carries every claim that arrived while
        // others ran, so a process's loops never race each other over the same index entries and
        // each statement's fixed cost is shared (docs/benchmarks). Two may be in flight, so that one
        // slow statement (a completion waiting for a row lock, a slow commit) does not hold up
        // every loop of the instance; in steady state the loops' claims meet in one. Only claims
        // asking for the same lease ride together. A statement every caller left is cancelled on
        // the server; the share of a caller that left a statement others still wait for is undone.
        this.leases = new GroupCommit<>(config.name(), "claim", this::leaseMerged,
                request -> Math.max(request.limit(), request.complete().length), config.maxWriteBatch(),
                config.writeTimeout(), timer, GroupCommit.WriteListener.NONE,
                new GroupCommit.Policy<>((first, other) -> first.leaseMicros() == other.leaseMicros(), true,
                        this::handBack, LEASING_STATEMENTS_IN_FLIGHT));
        this.wakeGate = new WakeGate(wakeups, config.minWakeInterval(), timer);
        this.look = new CursorLook(config.name(), cursors, this::lookBehindCursors, wakeGate::wake, metrics,
                System::nanoTime);
    }

    /**
     * A queue over {@code connectionFactory}; see {@link io.workqueue.WorkQueueBuilder#build()}.
     *
     * @throws UnsupportedDialectException if the factory does not report PostgreSQL
     */
    static <K> PostgresWorkQueue<K> create(ConnectionFactory connectionFactory, WorkQueueConfig config,
            KeyCodec<K> codec, @Nullable Publisher<?> wakeups, Scheduler timer, QueueMetrics metrics) {
        Objects.requireNonNull(connectionFactory, "connectionFactory");
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(codec, "codec");
        Objects.requireNonNull(timer, "timer");
        Objects.requireNonNull(metrics, "metrics");
        requirePostgres(connectionFactory);
        return new PostgresWorkQueue<>(connectionFactory, config, codec, wakeups, timer, metrics);
    }

    /** Pools report the metadata of the factory they wrap, so one check covers both. */
    private static void requirePostgres(ConnectionFactory connectionFactory) {
        String product = connectionFactory.getMetadata().getName();
        if (!"PostgreSQL".equalsIgnoreCase(product)) {
            throw new UnsupportedDialectException("reactive-workqueue runs on PostgreSQL only, but the connection"
                    + " factory reports " + product + " (" + connectionFactory.getClass().getName() + ")");
        }
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

    // ---------------------------------------------------------------- enqueue

    @Override
    public Mono<Void> enqueue(Collection<Entry<K>> entries) {
        return Mono.defer(() -> {
            List<EncodedEntry> encoded = encodeEntries(entries);
            return encoded.isEmpty() ? Mono.empty() : enqueues.submit(encoded);
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

    /**
     * A transactional enqueue. On a queue that notifies, the upsert either carries the notification
     * ({@code inTransaction}) or hands the transaction's id to the notifier, which announces the
     * rows once that transaction has committed.
     */
    private Mono<Void> enqueueOn(Connection connection, Collection<Entry<K>> entries, boolean inTransaction) {
        return Mono.defer(() -> {
            Objects.requireNonNull(connection, "connection");
            List<EncodedEntry> merged = EncodedEntry.merge(List.of(encodeEntries(entries)));
            if (merged.isEmpty()) {
                return Mono.<Void>empty();
            }
            Notifier announcer = notifier;
            Mono<Void> written;
            if (announcer == null) {
                written = rowsUpdated(upsert(connection, merged, sql.enqueue)).then();
            } else if (inTransaction) {
                written = rowsUpdated(upsert(connection, merged, sql.enqueueNotifying)
                        .bind(4, config.notifyChannel())).then();
            } else {
                written = Flux.from(upsert(connection, merged, sql.enqueueInTransaction).execute())
                        .concatMap(result -> result.map((row, meta) -> Objects.requireNonNull(
                                row.get("xid", String.class), "the enqueue's transaction id")))
                        .doOnNext(announcer::awaitCommit)
                        .then();
            }
            return written.onErrorMap(this::outdatedSchema).doOnSuccess(ignored -> metrics.enqueued(merged.size()));
        });
    }

    /** The group commit's write: merge every caller's entries, then one upsert. */
    private Mono<Void> writeMerged(List<List<EncodedEntry>> batches) {
        List<EncodedEntry> merged = EncodedEntry.merge(batches);
        // How long it took, and whether it failed or timed out, is the group commit's to report.
        return withRetries(inConnection(connection -> rowsUpdated(upsert(connection, merged, sql.enqueue)).then()))
                .doOnSuccess(ignored -> {
                    metrics.flushed(merged.size());
                    if (notifier != null) {
                        notifier.committed();
                    }
                });
    }

    /**
     * The notifier's ticks, each on a connection of this queue's factory, in autocommit, bounded by
     * {@code writeTimeout} (an abandoned one is cancelled on the server).
     */
    private final class NotifyChannel implements Notifier.Channel {
        @Override
        public Mono<Notifier.Tick> tick(boolean notify, Collection<String> awaited) {
            return inConnection(connection -> Flux.from(connection.createStatement(Sql.NOTIFIER_TICK)
                            .bind(0, config.notifyChannel())
                            .bind(1, awaited.toArray(String[]::new))
                            .bind(2, notify)
                            .execute())
                    .concatMap(result -> result.map((row, meta) -> {
                        String xid = row.get("xid", String.class);
                        String status = row.get("status", String.class);
                        boolean notified = Boolean.TRUE.equals(row.get("notified", Boolean.class));
                        // The one row when nothing is awaited has no xid.
                        return new Object[] {xid == null ? "" : xid, status == null ? Notifier.UNKNOWN : status, notified};
                    }))
                    .collectList()
                    .map(rows -> {
                        Map<String, String> statuses = new HashMap<>();
                        boolean notified = false;
                        for (Object[] row : rows) {
                            notified |= (Boolean) row[2];
                            if (!((String) row[0]).isEmpty()) {
                                statuses.put((String) row[0], (String) row[1]);
                            }
                        }
                        return new Notifier.Tick(notified, statuses);
                    }))
                    .timeout(config.writeTimeout(), timer);
        }
    }

    /** The upsert of {@code merged} as {@code statementSql} (one of the enqueue statements), its first four parameters bound. */
    private Statement upsert(Connection connection, List<EncodedEntry> merged, String statementSql) {
        int n = merged.size();
        String[] keys = new String[n];
        Integer[] priorities = new Integer[n];
        Long[] delays = new Long[n];
        long now = System.nanoTime();
        for (int i = 0; i < n; i++) {
            EncodedEntry e = merged.get(i);
            keys[i] = e.key();
            priorities[i] = e.priority();
            delays[i] = e.delayMicros();
            // This instance's claims read a band it writes to from then on, without waiting for
            // a look to find it.
            if (i == 0 || e.priority() != merged.get(i - 1).priority()) {
                cursors.bandSeen(e.priority(), now);
            }
        }
        return connection.createStatement(statementSql)
                .bind(0, config.name())
                .bind(1, keys)
                .bind(2, priorities)
                .bind(3, delays);
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

    /** Where this instance's claims start reading each band; for tests in this package. */
    ClaimCursors cursors() {
        return cursors;
    }

    /** The notifier of this instance's wakeups, {@code null} when it sends none; for tests in this package. */
    @Nullable Notifier notifier() {
        return notifier;
    }

    /** The look behind this instance's claim cursors; for tests in this package. */
    CursorLook look() {
        return look;
    }

    @Override
    public Mono<List<Item<K>>> claim(int limit, Duration lease) {
        return Mono.defer(() -> {
            Durations.requireLease(lease);
            return leases.submit(new LeaseRequest(NO_KEYS, batchSize(limit), Durations.micros(lease)))
                    .map(Leased::items);
        });
    }

    @Override
    public Mono<List<Item<K>>> completeAndClaim(Collection<K> completed, int limit, Duration lease) {
        return Mono.defer(() -> {
            Durations.requireLease(lease);
            return leases.submit(new LeaseRequest(encodeDistinct(completed), batchSize(limit), Durations.micros(lease)))
                    .map(Leased::items);
        });
    }

    /** A claim's limit as the API reads it: at most {@code maxClaimBatch}, which is also what 0 or less means. */
    private int batchSize(int limit) {
        return limit <= 0 || limit > config.maxClaimBatch() ? config.maxClaimBatch() : limit;
    }

    /**
     * One caller's part of a leasing statement: the items to lease, for how long, and the keys to
     * complete first ({@link #NO_KEYS} for a plain claim).
     */
    private record LeaseRequest(String[] complete, int limit, long leaseMicros) {}

    private static final String[] NO_KEYS = new String[0];

    /**
     * The leasing group commit's write: one statement for every caller's claim (limits added up,
     * which the group commit's weight keeps within {@code maxWriteBatch}) and, if any caller
     * completes keys, their completion first, in the same transaction. The leased items are dealt
     * out in claim order, each caller taking as many as it asked for.
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
        Mono<Leased<K>> statement = complete.length == 0
                ? leaseDue(sql.claimDue, sql.claimFromCursors, 4, limit, leaseMicros, s -> s)
                : leaseDue(sql.completeAndClaim, sql.completeAndClaimFromCursors, 5, limit, leaseMicros,
                        s -> s.bind(4, complete));
        return withRetries(statement).map(leased -> {
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
        writeEncoded(share.storedKeys().toArray(String[]::new), sql.handBackKeys,
                statement -> statement.bind(2, attempts).bind(3, priorLeases))
                .subscribe(count -> log.debug("queue {}: handed back {} of {} items leased for a caller that left",
                                config.name(), count, n),
                        e -> log.warn("queue {}: handing back {} items leased for a caller that left failed; their"
                                + " leases will lapse", config.name(), n, e));
    }

    /**
     * Runs a statement built on {@link Sql#claimDue}'s shape: $1 queue, $2 attempt limit, $3 claim
     * limit, $4 lease, further parameters bound by {@code bindRest}. It returns one row: the leased
     * items as parallel arrays in claim order, and the number of items it completed. The claim is
     * {@code fromHeadSql} when the {@link ClaimCursors} plan a claim from the head, else
     * {@code cursorSql} with the bands and their cursors bound from the (0-based) parameter
     * {@code cursorParameter} on. Each claim also starts a look behind the cursors, in the
     * background, when one is due.
     */
    private Mono<Leased<K>> leaseDue(String fromHeadSql, String cursorSql, int cursorParameter, int batch,
            long leaseMicros, UnaryOperator<Statement> bindRest) {
        return Mono.defer(() -> {
            look.lookIfDue();
            long start = System.nanoTime();
            ClaimCursors.Plan plan = cursors.plan(start);
            return inConnection(connection -> {
                        Statement statement = bindRest.apply(connection.createStatement(plan.fromHead() ? fromHeadSql : cursorSql)
                                .bind(0, config.name())
                                .bind(1, config.maxAttempts())
                                .bind(2, batch)
                                .bind(3, leaseMicros));
                        if (!plan.fromHead()) {
                            statement.bind(cursorParameter, plan.priorities()).bind(cursorParameter + 1, plan.fromMicros());
                        }
                        return Flux.from(statement.execute())
                                .concatMap(result -> result.map((row, meta) -> {
                                    metrics.requeuedDuringLease(longValue(row.get(7, Long.class)));
                                    ClaimedRows rows = ClaimedRows.inClaimOrder(row.get(0, String[].class),
                                            row.get(1, Integer[].class), row.get(2, Integer[].class),
                                            row.get(3, Integer[].class), row.get(5, Long[].class));
                                    cursors.claimed(plan, batch, rows.priorities(), rows.availableMicros(),
                                            longValue(row.get(6, Long.class)), System.nanoTime());
                                    return leased(rows, longValue(row.get(4, Long.class)));
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
     * One look behind the claim cursors ({@link CursorLook}): {@link Sql#lookBehindCursors} in a
     * transaction of its own, after {@link Sql#LOOK_SETTINGS}, on a connection of its own, timed from
     * sending the statement to its answer.
     */
    private Mono<CursorLook.Found> lookBehindCursors() {
        return Mono.usingWhen(connectionFactory.create(),
                connection -> Mono.from(connection.beginTransaction())
                        .then(rowsUpdated(connection.createStatement(Sql.LOOK_SETTINGS)))
                        .then(Mono.defer(() -> {
                            long sent = System.nanoTime();
                            return Flux.from(connection.createStatement(sql.lookBehindCursors)
                                            .bind(0, config.name())
                                            .bind(1, config.maxAttempts())
                                            .execute())
                                    .concatMap(result -> result.map((row, meta) -> {
                                        Integer[] priorities = row.get(0, Integer[].class);
                                        Long[] firstDue = row.get(1, Long[].class);
                                        return new CursorLook.Found(priorities == null ? new Integer[0] : priorities,
                                                firstDue == null ? new Long[0] : firstDue,
                                                longValue(row.get(2, Long.class)), System.nanoTime() - sent);
                                    }))
                                    .single();
                        }))
                        .flatMap(found -> Mono.from(connection.commitTransaction()).thenReturn(found)),
                Connection::close,
                // The transaction failed (a lock timeout aborts it): end it before the connection goes back.
                (connection, error) -> Mono.from(connection.rollbackTransaction()).onErrorResume(e -> Mono.empty())
                        .then(Mono.from(connection.close())),
                // Cancelled (the queue closing) inside its transaction: never back to a pool in it.
                this::abandon);
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
                    return releaseEncoded(WorkerOptions.exponentialBackoff(row.attempts()), cause,
                            new String[] {row.storedKey()})
                            .onErrorResume(e -> {
                                log.warn("releasing undecodable key {} on queue {} failed; its lease will lapse",
                                        row.storedKey(), config.name(), e);
                                return Mono.empty();
                            });
                })
                .then();
    }

    /** Decodes the keys of the rows a claim leased, setting aside those the codec refuses. */
    private Leased<K> leased(ClaimedRows rows, long completed) {
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
            items.add(Item.of(key, priorities[i], attempts[i], priorLeases[i] == Sql.PRIOR_LEASE_LAPSED));
            storedKeys.add(keys[i]);
            priors.add(priorLeases[i]);
        }
        return new Leased<>(items, storedKeys, priors, undecodable, completed);
    }

    @Override
    public Flux<Item<K>> claimStream(Duration lease, Duration poll) {
        return Flux.defer(() -> {
            Durations.requireLease(lease);
            requirePositive("poll", poll);
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
            return new Worker<>(this, handler, options, timer).flux();
        });
    }

    @Override
    public Flux<Item<K>> process(Function<Item<K>, ? extends Publisher<?>> handler, WorkerOptions options,
            Publisher<?> stop) {
        return Flux.defer(() -> {
            Objects.requireNonNull(handler, "handler");
            Objects.requireNonNull(options, "options");
            Objects.requireNonNull(stop, "stop");
            return new Worker<>(this, handler, options, timer, stop).flux();
        });
    }

    // ---------------------------------------------------------------- lock-ordered writers

    @Override
    public Mono<Long> complete(Collection<K> keys) {
        return Mono.defer(() -> {
            String[] encoded = encodeDistinct(keys);
            return encoded.length == 0 ? Mono.just(0L) : completions.submit(encoded);
        });
    }

    /**
     * The complete group commit's write: one lock-ordered statement for every caller's keys. Each
     * completed key is credited to the first caller that named it, so counts stay per call.
     */
    private Mono<List<Long>> completeMerged(List<String[]> callers) {
        String[] union = MergedKeys.union(callers);
        return withRetries(inConnection(connection -> Flux.from(connection.createStatement(sql.completeKeys)
                                .bind(0, config.name())
                                .bind(1, union)
                                .execute())
                        .concatMap(result -> result.map((row, meta) -> {
                            long count = longValue(row.get(0, Long.class));
                            String[] some = row.get(1, String[].class);
                            metrics.requeuedDuringLease(longValue(row.get(2, Long.class)));
                            // Null: every key named was completed (MergedKeys checks it against the count).
                            return MergedKeys.credit(callers, count, some == null ? null : new HashSet<>(Arrays.asList(some)));
                        }))
                        .single()))
                .doOnNext(counts -> metrics.completed(counts.stream().mapToLong(Long::longValue).sum()));
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
            return releaseEncoded(delay, cause, encodeDistinct(keys));
        });
    }

    /** {@link #release} of keys already encoded, vetted and distinct. */
    private Mono<Long> releaseEncoded(Duration delay, @Nullable Throwable cause, String[] encoded) {
        return Mono.defer(() -> {
            long delayMicros = Durations.micros(delay);
            String error = describe(cause);
            return writeEncoded(encoded, sql.releaseKeys, statement -> {
                statement.bind(2, delayMicros);
                return error == null ? statement.bindNull(3, String.class) : statement.bind(3, error);
            }).doOnNext(metrics::released);
        });
    }

    @Override
    @SafeVarargs
    @SuppressWarnings("varargs") // the array is only read, through a list view
    public final Mono<Long> release(Duration delay, @Nullable Throwable cause, K... keys) {
        return release(delay, cause, listView(keys));
    }

    @Override
    public Mono<Long> remove(Collection<K> keys) {
        return writeKeys(keys, sql.removeKeys, statement -> statement).doOnNext(metrics::removed);
    }

    @Override
    @SafeVarargs
    @SuppressWarnings("varargs") // the array is only read, through a list view
    public final Mono<Long> remove(K... keys) {
        return remove(listView(keys));
    }

    /**
     * Runs one of the lock-ordered key writers: $1 queue, $2 the distinct encoded keys, further
     * parameters bound by {@code bindRest}. The statement orders its own locks, so the client's
     * order does not matter; keys are still deduplicated so counts are of rows, not arguments.
     */
    private Mono<Long> writeKeys(Collection<K> keys, String statementSql, UnaryOperator<Statement> bindRest) {
        return Mono.defer(() -> writeEncoded(encodeDistinct(keys), statementSql, bindRest));
    }

    private Mono<Long> writeEncoded(String[] encoded, String statementSql, UnaryOperator<Statement> bindRest) {
        if (encoded.length == 0) {
            return Mono.just(0L);
        }
        return withRetries(inConnection(connection -> rowsUpdated(bindRest.apply(
                connection.createStatement(statementSql).bind(0, config.name()).bind(1, encoded)))));
    }

    // ---------------------------------------------------------------- maintenance and health

    @Override
    public Mono<Long> reap() {
        return Mono.defer(() -> withRetries(inConnection(connection -> rowsUpdated(
                connection.createStatement(sql.reapCompleted)
                        .bind(0, config.name())
                        .bind(1, Durations.micros(config.retention()))
                        .bind(2, config.reapBatchSize()))))
                .doOnNext(metrics::reaped));
    }

    @Override
    public Mono<Stats> stats() {
        return Mono.defer(() -> inConnection(connection -> StatsRead.on(connection, sql.stats, config.name(),
                        config.maxAttempts()))
                .doOnNext(metrics::observed));
    }

    @Override
    public Mono<Housekeeping> housekeep(Duration lease) {
        return Mono.defer(() -> {
            Objects.requireNonNull(lease, "lease");
            Duration held = Durations.capped(Durations.requireLease(lease));
            return inConnection(connection -> Flux.from(connection.createStatement(sql.keepHouse)
                            .bind(0, config.name())
                            .bind(1, keeperName)
                            .bind(2, Durations.micros(held))
                            .execute())
                    .concatMap(result -> result.map((row, meta) -> Rows.keeperRow(row)))
                    .single())
                    .onErrorMap(this::outdatedSchema)
                    .flatMap(row -> row.kept() ? keepHouse(held) : Mono.just(follow(row)));
        });
    }

    /** The keeper's round: reap, read, publish. */
    private Mono<Housekeeping> keepHouse(Duration lease) {
        return reapAll().flatMap(reaped -> stats().flatMap(stats -> horizon().flatMap(horizon ->
                inConnection(connection -> rowsUpdated(connection.createStatement(sql.publishReading)
                        .bind(0, config.name())
                        .bind(1, keeperName)
                        .bind(2, stats.pending())
                        .bind(3, stats.ready())
                        .bind(4, stats.leased())
                        .bind(5, stats.stalled())
                        .bind(6, stats.completed())
                        .bind(7, stats.completedCapped())
                        .bind(8, Durations.micros(stats.oldestReadyAge()))
                        .bind(9, Durations.micros(horizon.oldestTransactionAge()))
                        .bind(10, horizon.holderPid())
                        .bind(11, horizon.replicationSlotXminAge())))
                        .thenReturn(Housekeeping.of(true, keeperName, reaped, stats, horizon, Duration.ZERO, lease)))));
    }

    /** Another instance keeps the house: report its reading, gauges included, without the WARN. */
    private Housekeeping follow(Rows.KeeperRow row) {
        if (row.stats() != null) {
            metrics.observed(row.stats());
        }
        if (row.horizon() != null) {
            metrics.observed(row.horizon());
        }
        return Housekeeping.of(false, row.keeper(), 0, row.stats(), row.horizon(), row.readingAge(), row.keeperLeaseLeft());
    }

    /** {@code HOSTNAME} (a pod's name under Kubernetes), the process id and a random suffix. */
    private static String keeperName() {
        String host = System.getenv("HOSTNAME");
        return (host == null || host.isBlank() ? "host" : host) + "/" + ProcessHandle.current().pid() + "/"
                + Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xffffffL);
    }

    @Override
    public Mono<Boolean> readyLongerThan(Duration threshold) {
        return Mono.defer(() -> {
            Durations.requireNotNegative("threshold", threshold);
            return inConnection(connection -> Flux.from(connection.createStatement(sql.readyLongerThan)
                            .bind(0, config.name())
                            .bind(1, config.maxAttempts())
                            .bind(2, Durations.micros(threshold))
                            .execute())
                    .concatMap(result -> result.map((row, meta) -> Boolean.TRUE.equals(row.get("late", Boolean.class))))
                    .single());
        });
    }

    @Override
    public Mono<Horizon> horizon() {
        return Mono.defer(() -> inConnection(connection -> Flux.from(connection.createStatement(Sql.HORIZON).execute())
                        .concatMap(result -> result.map((row, meta) -> Horizon.of(
                                ofMicros(longValue(row.get("oldest_us", Long.class))),
                                intValue(row.get("holder_pid", Integer.class)),
                                longValue(row.get("slot_xmin_age", Long.class)))))
                        .single())
                .doOnNext(this::observed));
    }

    /** Feeds the gauge, and warns, at most once a minute, while the horizon is held for too long. */
    private void observed(Horizon horizon) {
        metrics.observed(horizon);
        if (horizon.oldestTransactionAge().compareTo(config.horizonWarning()) <= 0) {
            return;
        }
        long now = System.nanoTime();
        long last = lastHorizonWarning.get();
        if ((last == 0 || now - last >= HORIZON_WARNING_INTERVAL.toNanos()) && lastHorizonWarning.compareAndSet(last, now)) {
            log.warn("queue {}: a transaction (pid {}) has held the database's MVCC horizon for {} s; until it ends,"
                            + " VACUUM cannot remove the row versions the queue leaves behind, so the table grows and"
                            + " looks behind the claim cursors and reaps slow down."
                            + " See pg_stat_activity for that pid (idle in transaction?), and idle_in_transaction_session_timeout",
                    config.name(), horizon.holderPid(), horizon.oldestTransactionAge().toSeconds());
        }
    }

    @Override
    public Mono<Void> awaitWork(Duration poll) {
        return Mono.defer(() -> {
            requirePositive("poll", poll);
            return wakeGate.await(poll);
        });
    }

    @Override
    public Mono<Void> close() {
        // Merged completes are flushed too, but never refused: a worker may complete what it holds.
        Mono<Void> flushed = Mono.when(enqueues.close(), completions.flush());
        // The last flush may have made a wakeup due: it goes out now rather than at the interval's end.
        return notifier == null ? flushed : flushed.then(Mono.defer(notifier::close));
    }

    // ---------------------------------------------------------------- plumbing

    /**
     * Borrows a connection for {@code work} and gives it back on completion and error; on cancel
     * (a subscriber leaving, the group commit's timeout) it is {@linkplain #abandon abandoned}, and
     * after an error saying it leads to a server that refuses writes it is
     * {@linkplain #discard discarded}.
     */
    private <T> Mono<T> inConnection(Function<Connection, Mono<T>> work) {
        return Mono.usingWhen(connectionFactory.create(), work, Connection::close,
                        (connection, error) -> SqlStates.isMisdirected(error) ? Connections.discard(connection) : connection.close(),
                        this::abandon)
                .onErrorMap(this::outdatedSchema);
    }

    /**
     * A statement that names a column this release added, run against a table an earlier release
     * created, fails with "column ... does not exist" (42703): say what to do instead.
     */
    private Throwable outdatedSchema(Throwable error) {
        String state = SqlStates.sqlState(error);
        // A missing column (version 1) or, for housekeeping, the missing per-queue table (version 2).
        if (SqlStates.UNDEFINED_COLUMN.equals(state)
                || (SqlStates.UNDEFINED_TABLE.equals(state) && String.valueOf(error.getMessage()).contains(sql.queuesTable))) {
            return new WorkQueueException("table " + sql.table + " is older than this release's schema (version "
                    + WorkQueueMigrations.SCHEMA_VERSION + "): upgrade it in place with WorkQueueMigrations.apply(...),"
                    + " or apply the versioned scripts from WorkQueueMigrations.versionedScript(...); " + error.getMessage(),
                    error);
        }
        return error;
    }

    /** See {@link Connections#abandon}. */
    private Mono<Void> abandon(Connection connection) {
        return Connections.abandon(connection, timer, config.name());
    }

    /** Runs a write again, on a fresh connection, only when PostgreSQL asks for it (40001, 40P01). */
    private <T> Mono<T> withRetries(Mono<T> write) {
        if (config.writeAttempts() <= 1) {
            return write;
        }
        return write.retryWhen(Retry.max(config.writeAttempts() - 1L)
                .filter(SqlStates::isWriteRetryable)
                .doBeforeRetry(signal -> metrics.writeRetried())
                .doBeforeRetry(signal -> log.warn("write on queue {} hit SQLSTATE {}; retrying (attempt {} of {})",
                        config.name(), SqlStates.sqlState(signal.failure()), signal.totalRetries() + 2,
                        config.writeAttempts()))
                .onRetryExhaustedThrow((spec, signal) -> signal.failure()));
    }

    private static Mono<Long> rowsUpdated(Statement statement) {
        return Flux.from(statement.execute())
                .concatMap(Result::getRowsUpdated)
                .reduce(0L, Long::sum);
    }

    private static @Nullable String describe(@Nullable Throwable cause) {
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

    /**
     * A view of a varargs array. A null array stays null, so that the method it is handed to
     * reports it at subscription like any other bad argument, rather than throwing here: the one
     * place a null crosses a parameter the types say is never null, on purpose.
     */
    @SuppressWarnings("NullAway")
    private static <T> List<T> listView(T[] array) {
        return array == null ? null : Arrays.asList(array);
    }

    private static void requirePositive(String name, @Nullable Duration value) {
        if (value == null || value.isZero() || value.isNegative()) {
            throw new IllegalArgumentException(name + " must be positive but was " + value);
        }
    }
}
