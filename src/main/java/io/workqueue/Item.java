package io.workqueue;

import java.util.Objects;
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

    private Item(K key, int priority, int attempts, boolean reclaimed) {
        this.key = Objects.requireNonNull(key, "key");
        this.priority = priority;
        this.attempts = attempts;
        this.reclaimed = reclaimed;
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
        return new Item<>(key, priority, attempts, reclaimed);
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
