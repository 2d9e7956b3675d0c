package io.workqueue;

import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * One leased unit of work, as a claim hands it out: its key, and what the queue knew of it when it
 * was leased.
 *
 * <p>Immutable and thread-safe if the key is. <b>Growth.</b> An output of the queue, free to gain
 * properties: a final class, not a record, so that a later release can add an accessor without
 * breaking code compiled against this one. The queue makes instances; {@link #of} exists for
 * tests, fakes and mocks, and keeps its signature when properties are added (a new factory
 * overload takes them, and {@code of} gives them a documented default). Equality is by value.
 *
 * @param <K> the key type
 */
public final class Item<K> {
    private final K key;
    private final int priority;
    private final int attempts;
    private final boolean reclaimed;
    private final List<String> traceContexts;
    private final @Nullable Instant claimedAt;

    private Item(K key, int priority, int attempts, boolean reclaimed, List<String> traceContexts,
            @Nullable Instant claimedAt) {
        this.key = Objects.requireNonNull(key, "key");
        this.priority = priority;
        this.attempts = attempts;
        this.reclaimed = reclaimed;
        this.traceContexts = traceContexts;
        this.claimedAt = claimedAt;
    }

    /**
     * An item as a claim would hand it out; for tests and for other implementations of
     * {@link ReactiveWorkQueue}.
     *
     * @param key       see {@link #key()}
     * @param priority  see {@link #priority()}
     * @param attempts  see {@link #attempts()}
     * @param reclaimed see {@link #reclaimed()}
     * @param <K>       the key type
     * @return the item
     * @throws NullPointerException if {@code key} is {@code null}
     */
    public static <K> Item<K> of(K key, int priority, int attempts, boolean reclaimed) {
        return new Item<>(key, priority, attempts, reclaimed, List.of(), null);
    }

    /**
     * This item carrying {@code traceContexts} (see {@link #traceContexts()}); for the queue, and
     * for tests and other implementations of {@link ReactiveWorkQueue}.
     *
     * @param traceContexts the W3C {@code traceparent} values of the enqueues this run answers,
     *                      oldest first
     * @return an item equal to this one, carrying them
     * @throws NullPointerException if {@code traceContexts} or one of them is {@code null}
     */
    public Item<K> withTraceContexts(List<String> traceContexts) {
        return new Item<>(key, priority, attempts, reclaimed, List.copyOf(traceContexts), claimedAt);
    }

    /**
     * This item stamped with the claim that leased it (see {@link #claimedAt()}); for the queue,
     * and for tests and other implementations of {@link ReactiveWorkQueue}.
     *
     * @param claimedAt when the claim leased the item, on the database clock; truncated to
     *                  microseconds, the database clock's resolution
     * @return an item equal to this one, carrying the stamp
     * @throws NullPointerException if {@code claimedAt} is {@code null}
     */
    public Item<K> withClaimedAt(Instant claimedAt) {
        return new Item<>(key, priority, attempts, reclaimed, traceContexts,
                Objects.requireNonNull(claimedAt, "claimedAt").truncatedTo(ChronoUnit.MICROS));
    }

    /**
     * The key that names the work: what to pass to {@code complete}, {@code release} or
     * {@code remove}.
     *
     * @return the decoded key, never {@code null}
     */
    public K key() {
        return key;
    }

    /**
     * The item's priority when it was claimed.
     *
     * @return any {@code int}; higher was claimed first
     */
    public int priority() {
        return priority;
    }

    /**
     * How many times the item has been claimed, this claim included.
     *
     * @return 1 on the first claim; compared with {@link WorkQueueConfig#maxAttempts()}
     */
    public int attempts() {
        return attempts;
    }

    /**
     * Whether this claim took over a lease that had lapsed, so another worker may still be doing
     * the same work.
     *
     * @return {@code true} after a lapsed lease; {@code false} after a release, a completion or a
     *         fresh enqueue
     */
    public boolean reclaimed() {
        return reclaimed;
    }

    /**
     * The trace contexts of the enqueues this run of the item answers, when its queue stores them
     * ({@link WorkQueueConfig#storeTraceContexts()}): W3C {@code traceparent} values, oldest first,
     * at most {@link WorkQueueConfig#MAX_TRACE_CONTEXTS}, the most recent. {@code process()} links
     * its handler's span to each (see {@code io.workqueue.observation}); a caller of
     * {@code claim} can do the same with its own tracer. What an item keeps: every enqueue that
     * carried a trace, from the one that made the item pending (a new key, or a completed key
     * enqueued again) until it completes, so a retry after a release or a lapsed lease, and the
     * run again of an item enqueued during its lease, link to them all.
     *
     * <p>Not part of {@link #equals}: the same claim of the same item, traced or not.
     *
     * @return the trace contexts; empty when none were stored
     */
    public List<String> traceContexts() {
        return traceContexts;
    }

    /**
     * When the claim that handed out this item leased it, on the database clock. With
     * {@link #attempts()} it names that claim, which is how {@code extend} and {@code snooze} act
     * only for the holder of an item's latest claim: a caller whose lease lapsed, and whose item
     * another worker has claimed since, extends or snoozes nothing. The lease itself ran from this
     * instant for the lease the claim asked for (or from the latest extension).
     *
     * <p>Not part of {@link #equals}, like {@link #traceContexts()}.
     *
     * @return the claim's instant; empty for an item made by {@link #of} without
     *         {@link #withClaimedAt}, which {@code extend} and {@code snooze} refuse
     */
    public Optional<Instant> claimedAt() {
        return Optional.ofNullable(claimedAt);
    }

    /**
     * Whether {@code other} is an item with an equal key and the same priority, attempts and
     * reclaimed flag.
     *
     * @param other any object, or {@code null}
     * @return {@code true} if every property is equal
     */
    @Override
    public boolean equals(@Nullable Object other) {
        return other instanceof Item<?> that
                && key.equals(that.key)
                && priority == that.priority
                && attempts == that.attempts
                && reclaimed == that.reclaimed;
    }

    /**
     * A hash over every property, consistent with {@link #equals}.
     *
     * @return the hash code
     */
    @Override
    public int hashCode() {
        return Objects.hash(key, priority, attempts, reclaimed);
    }

    /**
     * The item's properties by name, for logs.
     *
     * @return {@code Item[key=..., priority=..., attempts=..., reclaimed=...]}
     */
    @Override
    public String toString() {
        return "Item[key=" + key + ", priority=" + priority + ", attempts=" + attempts + ", reclaimed=" + reclaimed
                + "]";
    }
}
