package io.workqueue.postgres;

import io.r2dbc.spi.Connection;
import io.workqueue.WorkQueueConfig;
import io.workqueue.internal.GroupCommit;
import io.workqueue.internal.Notifier;
import io.workqueue.internal.QueueMetrics;
import io.workqueue.internal.QueueObservations;
import io.workqueue.internal.base.CommitScope;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/**
 * The queue's enqueues: the group commit (one upsert in flight per instance, every caller that
 * arrives meanwhile riding the next), the transactional enqueue on a caller's connection, and the
 * wakeup notifications that announce them ({@link Notifier}). Entries arrive encoded and vetted.
 * Thread-safe.
 */
final class Enqueuer {
    private final WorkQueueConfig config;
    private final Database database;
    private final Sql sql;
    private final ClaimCursors cursors;
    private final QueueMetrics metrics;
    private final QueueObservations observations;
    private final Scheduler timer;
    private final GroupCommit<Request, Void> enqueues;
    /** Sends this instance's wakeup notifications; {@code null} when its enqueues send none. */
    private final @Nullable Notifier notifier;

    Enqueuer(WorkQueueConfig config, Database database, Sql sql, ClaimCursors cursors, QueueMetrics metrics,
            QueueObservations observations, Scheduler timer) {
        this.config = config;
        this.database = database;
        this.sql = sql;
        this.cursors = cursors;
        this.metrics = metrics;
        this.observations = observations;
        this.timer = timer;
        this.notifier = config.notifyOnEnqueue() && !config.notifyChannel().isEmpty()
                ? new Notifier(config.name(), new NotifyChannel(), config.minWakeInterval(), timer, metrics::notified)
                : null;
        // Weighed by the keys a call names, before merging: what a write's size grows with, and it
        // is known without merging.
        this.enqueues = new GroupCommit<>(config.name(), "enqueue", GroupCommit.withoutResults(this::writeMerged),
                request -> request.entries().size(), config.maxWriteBatch(), config.writeTimeout(), timer,
                metrics::flushEnded);
    }

    /** The notifier, {@code null} when this instance sends no notifications. */
    @Nullable Notifier notifier() {
        return notifier;
    }

    /**
     * Enqueues the entries through the group commit; completes once the upsert carrying them has
     * committed. {@code traceContext}: the caller's, stored with the keys when the queue stores
     * trace contexts; {@code null} for none.
     */
    Mono<Void> enqueue(List<EncodedEntry> encoded, @Nullable String traceContext) {
        return encoded.isEmpty() ? Mono.empty() : enqueues.submit(new Request(encoded,
                config.storeTraceContexts() ? traceContext : null));
    }

    /** One caller's part of a group-committed write: its entries, and its trace context or {@code null}. */
    private record Request(List<EncodedEntry> entries, @Nullable String traceContext) {}

    /**
     * A transactional enqueue of entries already merged. On a queue that notifies, the upsert
     * carries the notification ({@code inTransaction}); or, inside a caller's
     * {@link CommitScope}, leaves the notifier's report of a committed write to the scope; or
     * hands the transaction's id to the notifier, which announces the rows once that transaction
     * has committed.
     */
    Mono<Void> enqueueOn(Connection connection, List<EncodedEntry> merged, boolean inTransaction,
            @Nullable String traceContext) {
        if (merged.isEmpty()) {
            return Mono.empty();
        }
        Notifier announcer = notifier;
        // Traced statements only where the queue stores trace contexts: the others write none.
        String @Nullable [] traces = config.storeTraceContexts() ? sameTrace(merged.size(), traceContext) : null;
        Mono<Void> written;
        if (announcer == null) {
            written = plainUpsert(connection, merged, traces);
        } else if (inTransaction) {
            written = Database.rowsUpdated(upsert(connection, merged, traces, sql.enqueueNotifying,
                            sql.enqueueNotifyingTraced)
                    .bind("channel", config.notifyChannel())).then();
        } else {
            written = Mono.deferContextual(context -> {
                CommitScope scope = CommitScope.in(context);
                if (scope != null) {
                    // The caller's bracket announces the commit: no transaction to hand over.
                    return plainUpsert(connection, merged, traces)
                            .doOnSuccess(ignored -> scope.onCommit(announcer, announcer::committed));
                }
                return Flux.from(upsert(connection, merged, traces, sql.enqueueInTransaction,
                                sql.enqueueInTransactionTraced).execute())
                        .concatMap(result -> result.map((row, meta) -> Objects.requireNonNull(
                                row.get("xid", String.class), "the enqueue's transaction id")))
                        .doOnNext(announcer::awaitCommit)
                        .then();
            });
        }
        return written.onErrorMap(database::outdatedSchema).doOnSuccess(ignored -> metrics.enqueued(merged.size()));
    }

    /** The upsert alone, announcing nothing: on a queue without a notifier, or inside a caller's bracket. */
    private Mono<Void> plainUpsert(Connection connection, List<EncodedEntry> merged, String @Nullable [] traces) {
        return Database.rowsUpdated(upsert(connection, merged, traces, sql.enqueue, sql.enqueueTraced)).then();
    }

    /**
     * Stops the group commit: what is pending is written, every later enqueue fails with
     * {@code QueueClosedException}; then a notification that is due goes out.
     */
    Mono<Void> close() {
        return enqueues.close();
    }

    /** {@code n} copies of one caller's trace context, or null when it has none. */
    private static String @Nullable [] sameTrace(int n, @Nullable String traceContext) {
        if (traceContext == null) {
            return null;
        }
        String[] traces = new String[n];
        Arrays.fill(traces, traceContext);
        return traces;
    }

    /** The group commit's write: merge every caller's entries, then one upsert. */
    private Mono<Void> writeMerged(List<Request> requests) {
        List<List<EncodedEntry>> batches = new ArrayList<>(requests.size());
        List<String> links = new ArrayList<>();
        for (Request request : requests) {
            batches.add(request.entries());
            if (request.traceContext() != null) {
                links.add(request.traceContext());
            }
        }
        List<EncodedEntry> merged = EncodedEntry.merge(batches);
        String @Nullable [] traces = links.isEmpty() ? null : mergedTraces(requests, merged);
        // How long it took, and whether it failed or timed out, is the group commit's to report.
        Mono<Void> write = database.withRetries(database.inConnection(connection ->
                        Database.rowsUpdated(upsert(connection, merged, traces, sql.enqueue, sql.enqueueTraced)).then()))
                .doOnSuccess(ignored -> {
                    metrics.flushed(merged.size());
                    if (notifier != null) {
                        notifier.committed();
                    }
                });
        return observations.write(requests.size(), merged.size(), links, write);
    }

    /**
     * Each merged key's trace contexts, space-separated, in the order its callers arrived, distinct,
     * the most recent {@link WorkQueueConfig#MAX_TRACE_CONTEXTS}; null for a key none of its
     * callers traced. Aligned with {@code merged}.
     */
    private static String[] mergedTraces(List<Request> requests, List<EncodedEntry> merged) {
        Map<String, LinkedHashSet<String>> byKey = new HashMap<>();
        for (Request request : requests) {
            String trace = request.traceContext();
            if (trace == null) {
                continue;
            }
            for (EncodedEntry entry : request.entries()) {
                LinkedHashSet<String> traces = byKey.computeIfAbsent(entry.key(), key -> new LinkedHashSet<>());
                traces.remove(trace);
                traces.add(trace);
            }
        }
        String[] out = new String[merged.size()];
        for (int i = 0; i < out.length; i++) {
            LinkedHashSet<String> traces = byKey.get(merged.get(i).key());
            if (traces != null) {
                List<String> all = new ArrayList<>(traces);
                out[i] = String.join(" ", all.subList(Math.max(0, all.size() - WorkQueueConfig.MAX_TRACE_CONTEXTS),
                        all.size()));
            }
        }
        return out;
    }

    /**
     * The upsert of {@code merged} as {@code untraced} (one of the enqueue statements), its entries
     * bound; as its twin {@code traced} with the trace contexts, aligned with {@code merged}, when
     * there are any.
     */
    private SqlStatement.Bound upsert(Connection connection, List<EncodedEntry> merged, String @Nullable [] traces,
            SqlStatement untraced, SqlStatement traced) {
        SqlStatement.Bound bound = upsert(connection, merged, traces == null ? untraced : traced);
        return traces == null ? bound : bound.bind("traces", traces);
    }

    /** The upsert of {@code merged} as {@code statement} (one of the enqueue statements), its entries bound. */
    private SqlStatement.Bound upsert(Connection connection, List<EncodedEntry> merged, SqlStatement statement) {
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
        return statement.on(connection)
                .bind("queue", config.name())
                .bind("keys", keys)
                .bind("priorities", priorities)
                .bind("delays", delays);
    }

    /**
     * The notifier's ticks, each on a connection of this queue's factory, in autocommit, bounded by
     * {@code writeTimeout} (an abandoned one is cancelled on the server).
     */
    private final class NotifyChannel implements Notifier.Channel {
        @Override
        public Mono<Notifier.Tick> tick(boolean notify, Collection<String> awaited) {
            return database.inConnection(connection -> Flux.from(Sql.NOTIFIER_TICK.on(connection)
                            .bind("channel", config.notifyChannel())
                            .bind("xids", awaited.toArray(String[]::new))
                            .bind("notify", notify)
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
}
