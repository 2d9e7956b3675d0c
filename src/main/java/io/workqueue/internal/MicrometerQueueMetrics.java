package io.workqueue.internal;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.workqueue.Horizon;
import io.workqueue.Stats;
import io.workqueue.WorkQueueMeters;
import java.time.Duration;
import java.time.Instant;
import java.util.EnumMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.ToDoubleFunction;
import org.jspecify.annotations.Nullable;

/**
 * {@link QueueMetrics} over a Micrometer registry: the meters named in {@link WorkQueueMeters},
 * tagged with the queue's name. Only loaded when a registry is configured. Thread-safe.
 */
public final class MicrometerQueueMetrics implements QueueMetrics {
    private final Counter enqueued;
    private final Counter claimed;
    private final Counter reclaimed;
    private final Counter completed;
    private final Counter requeuedDuringLease;
    private final Counter released;
    private final Counter extensions;
    private final Counter extensionsRefused;
    private final Counter snoozed;
    private final Counter removed;
    private final Counter reaped;
    private final Counter writeRetries;
    private final Counter notifyCommits;
    private final Timer notifyCommitLatency;
    private final DistributionSummary claimBatchSize;
    private final Timer claimLatency;
    private final Timer claimLook;
    private final Counter claimLookFound;
    private final DistributionSummary flushSize;
    private final Timer claimLag;
    private final Timer claimToCompletion;
    /** The last reading of the longest live lease, in seconds; NaN before the first. */
    private final AtomicReference<Double> longestLease = new AtomicReference<>(Double.NaN);
    /** One timer per outcome, all registered up front so a dashboard sees zeros, not gaps. */
    private final Map<WriteOutcome, Timer> flushLatency = new EnumMap<>(WriteOutcome.class);
    /** The last snapshot; the gauges read it, so they show nothing until the first stats(). */
    private final AtomicReference<Stats> lastStats = new AtomicReference<>();
    /** The last horizon reading; its gauge shows nothing until the first horizon(). */
    private final AtomicReference<Horizon> lastHorizon = new AtomicReference<>();

    /** Registers every meter for the queue called {@code queueName}. */
    public MicrometerQueueMetrics(MeterRegistry registry, String queueName) {
        Tags tags = Tags.of(WorkQueueMeters.QUEUE_TAG, queueName);
        enqueued = counter(registry, WorkQueueMeters.ENQUEUED, "keys written by enqueues", tags);
        claimed = counter(registry, WorkQueueMeters.CLAIMED, "items leased by claims", tags);
        reclaimed = counter(registry, WorkQueueMeters.RECLAIMED, "claims that took over a lapsed lease", tags);
        completed = counter(registry, WorkQueueMeters.COMPLETED, "items completed", tags);
        requeuedDuringLease = counter(registry, WorkQueueMeters.REQUEUED_DURING_LEASE,
                "completions that re-armed an item enqueued again during its lease", tags);
        released = counter(registry, WorkQueueMeters.RELEASED, "items released", tags);
        extensions = counter(registry, WorkQueueMeters.EXTENSIONS, "leases extended", tags);
        extensionsRefused = counter(registry, WorkQueueMeters.EXTENSIONS_REFUSED,
                "extensions of leases no longer the caller's", tags);
        snoozed = counter(registry, WorkQueueMeters.SNOOZED, "items handed back without counting the attempt", tags);
        gauge(registry, WorkQueueMeters.PAUSED, "1 while the queue is paused", null, tags, lastStats,
                stats -> stats.paused() ? 1 : 0);
        gauge(registry, WorkQueueMeters.PAUSED_DURATION, "how long the queue has been paused", "seconds", tags,
                lastStats, stats -> stats.pausedAt()
                        .map(at -> Math.max(0, Duration.between(at, Instant.now()).toNanos() / 1e9)).orElse(0.0));
        removed = counter(registry, WorkQueueMeters.REMOVED, "items removed", tags);
        reaped = counter(registry, WorkQueueMeters.REAPED, "completed items deleted", tags);
        writeRetries = counter(registry, WorkQueueMeters.WRITE_RETRIES, "writes retried on 40001/40P01", tags);
        notifyCommits = counter(registry, WorkQueueMeters.NOTIFY_COMMITS,
                "notifying commits of this instance (debounced wakeups)", tags);
        notifyCommitLatency = Timer.builder(WorkQueueMeters.NOTIFY_COMMIT_LATENCY)
                .description("one notifying commit of this instance").tags(tags).register(registry);
        claimBatchSize = DistributionSummary.builder(WorkQueueMeters.CLAIM_BATCH_SIZE)
                .description("items leased per claim").baseUnit("items").tags(tags).register(registry);
        claimLatency = Timer.builder(WorkQueueMeters.CLAIM_LATENCY)
                .description("one claim statement").tags(tags).register(registry);
        claimLook = Timer.builder(WorkQueueMeters.CLAIM_LOOK)
                .description("one look behind the claim cursors").tags(tags).register(registry);
        claimLookFound = counter(registry, WorkQueueMeters.CLAIM_LOOK_FOUND,
                "bands in which a look found items due behind the claim cursors", tags);
        flushSize = DistributionSummary.builder(WorkQueueMeters.ENQUEUE_FLUSH_SIZE)
                .description("distinct keys per group-committed write").baseUnit("keys").tags(tags).register(registry);
        for (WriteOutcome outcome : WriteOutcome.values()) {
            flushLatency.put(outcome, Timer.builder(WorkQueueMeters.ENQUEUE_FLUSH_LATENCY)
                    .description("one group-committed write, by how it ended")
                    .tags(tags).tag(WorkQueueMeters.OUTCOME_TAG, outcome.tag())
                    .register(registry));
        }
        gauge(registry, WorkQueueMeters.DEPTH, "items not completed", "items", tags, lastStats, Stats::pending);
        gauge(registry, WorkQueueMeters.READY, "items a claim would hand out now", "items", tags, lastStats,
                Stats::ready);
        gauge(registry, WorkQueueMeters.STALLED, "items out of attempts", "items", tags, lastStats, Stats::stalled);
        gauge(registry, WorkQueueMeters.OLDEST_READY_AGE, "how long the oldest ready item has waited", "seconds", tags,
                lastStats, stats -> stats.oldestReadyAge().toNanos() / 1e9);
        claimLag = Timer.builder(WorkQueueMeters.CLAIM_LAG)
                .description("per item claimed: from becoming claimable to the claim").tags(tags).register(registry);
        claimToCompletion = Timer.builder(WorkQueueMeters.CLAIM_TO_COMPLETION)
                .description("per item completed: from its claim to its completion").tags(tags).register(registry);
        Gauge.builder(WorkQueueMeters.LEASE_LONGEST, longestLease, AtomicReference::get)
                .description("how long the longest-running live lease has run since its claim")
                .baseUnit("seconds").tags(tags).register(registry);
        gauge(registry, WorkQueueMeters.HORIZON_AGE,
                "how long the oldest transaction holding back the MVCC horizon has been open", "seconds", tags,
                lastHorizon, horizon -> horizon.oldestTransactionAge().toNanos() / 1e9);
    }

    /**
     * Metrics over {@code registry}, which must be a {@code MeterRegistry}; typed {@code Object} so
     * that callers compile against no Micrometer type and load none until they get here.
     */
    public static QueueMetrics forRegistry(Object registry, String queueName) {
        return new MicrometerQueueMetrics((MeterRegistry) registry, queueName);
    }

    private static Counter counter(MeterRegistry registry, String name, String description, Tags tags) {
        return Counter.builder(name).description(description).tags(tags).register(registry);
    }

    /**
     * A gauge reading {@code field} of the last reading in {@code last} (a {@code stats()} snapshot,
     * a {@code horizon()}); NaN until the first.
     */
    private static <T> void gauge(MeterRegistry registry, String name, String description, @Nullable String baseUnit,
            Tags tags,
            AtomicReference<T> last, ToDoubleFunction<T> field) {
        Gauge.builder(name, last, ref -> {
                    T reading = ref.get();
                    return reading == null ? Double.NaN : field.applyAsDouble(reading);
                })
                .description(description).baseUnit(baseUnit).tags(tags).register(registry);
    }

    @Override
    public void flushed(int keys) {
        enqueued.increment(keys);
        flushSize.record(keys);
    }

    @Override
    public void flushEnded(WriteOutcome outcome, long nanos) {
        // Every outcome's timer is registered up front, so the gauge shows zeros before a write fails.
        Objects.requireNonNull(flushLatency.get(outcome), "a timer per outcome").record(nanos, TimeUnit.NANOSECONDS);
    }

    @Override
    public void enqueued(int keys) {
        enqueued.increment(keys);
    }

    @Override
    public void claimed(int items, int reclaimedItems, long nanos) {
        claimed.increment(items);
        reclaimed.increment(reclaimedItems);
        claimBatchSize.record(items);
        claimLatency.record(nanos, TimeUnit.NANOSECONDS);
    }

    @Override
    public void looked(long nanos, int bandsOpened) {
        claimLook.record(nanos, TimeUnit.NANOSECONDS);
        claimLookFound.increment(bandsOpened);
    }

    @Override
    public void completed(long count) {
        completed.increment(count);
    }

    @Override
    public void requeuedDuringLease(long count) {
        requeuedDuringLease.increment(count);
    }

    @Override
    public void released(long count) {
        released.increment(count);
    }

    @Override
    public boolean timesItems() {
        return true;
    }

    @Override
    public void extended(long count, long refused) {
        extensions.increment(count);
        extensionsRefused.increment(refused);
    }

    @Override
    public void snoozed(long count) {
        snoozed.increment(count);
    }

    @Override
    public void removed(long count) {
        removed.increment(count);
    }

    @Override
    public void reaped(long count) {
        reaped.increment(count);
    }

    @Override
    public void notified(long nanos) {
        notifyCommits.increment();
        notifyCommitLatency.record(nanos, TimeUnit.NANOSECONDS);
    }

    @Override
    public void writeRetried() {
        writeRetries.increment();
    }

    @Override
    public void observed(Stats stats) {
        lastStats.set(stats);
    }

    @Override
    public void observed(Horizon horizon) {
        lastHorizon.set(horizon);
    }

    @Override
    public void longestLease(Duration longest) {
        longestLease.set(longest.toNanos() / 1e9);
    }

    @Override
    public void claimLags(@Nullable Long @Nullable [] waitedMicros) {
        recordMicros(claimLag, waitedMicros);
    }

    @Override
    public void heldUntilCompletion(@Nullable Long @Nullable [] heldMicros) {
        recordMicros(claimToCompletion, heldMicros);
    }

    /** Records each span; a negative one (the database clock stepped back) as zero. */
    private static void recordMicros(Timer timer, @Nullable Long @Nullable [] micros) {
        if (micros == null) {
            return; // nothing claimed, or nothing completed
        }
        for (Long span : micros) {
            if (span != null) {
                timer.record(Math.max(span, 0L), TimeUnit.MICROSECONDS);
            }
        }
    }
}
