package io.workqueue;

import io.workqueue.internal.base.Durations;
import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * One key to enqueue, with its priority and how long to hold it back: what
 * {@link ReactiveWorkQueue#enqueue(java.util.Collection)} takes.
 *
 * <p>Higher priorities are claimed first. The delay is measured on the database clock from the
 * moment the row is written; a negative delay is treated as zero, and one longer than
 * {@link ReactiveWorkQueue#MAX_DURATION} as that maximum ("forever"). A {@code null} key is allowed
 * here so that it can be reported as {@link InvalidKeyException.Reason#NULL} by the enqueue that
 * carries it, at subscription.
 *
 * <p>Immutable and thread-safe if the key is. <b>Growth.</b> A final class made only through
 * {@link #of} and the {@code with...} methods, never through a constructor, so that a later release
 * can add a property (another {@code with...} method and accessor, with a default) without breaking
 * code compiled against this one. Equality is by value.
 *
 * @param <K> the key type
 */
public final class Entry<K> {
    private final @Nullable K key;
    private final int priority;
    private final Duration delay;

    private Entry(@Nullable K key, int priority, Duration delay) {
        this.key = key;
        this.priority = priority;
        this.delay = delay.isNegative() ? Duration.ZERO : Durations.capped(delay);
    }

    /**
     * An entry for {@code key} with priority 0 and no delay.
     *
     * @param key the key naming the unit of work; {@code null} is refused by the enqueue, not here
     * @param <K> the key type
     * @return the entry
     */
    public static <K> Entry<K> of(@Nullable K key) {
        return new Entry<>(key, 0, Duration.ZERO);
    }

    /**
     * This entry with another priority.
     *
     * @param priority higher runs first; any {@code int}
     * @return a new entry; this one is unchanged
     */
    public Entry<K> withPriority(int priority) {
        return new Entry<>(key, priority, delay);
    }

    /**
     * This entry with another delay; a negative delay becomes zero, one longer than
     * {@link ReactiveWorkQueue#MAX_DURATION} becomes {@code MAX_DURATION}.
     *
     * @param delay how long the item is held back after it is written
     * @return a new entry; this one is unchanged
     * @throws NullPointerException if {@code delay} is {@code null}
     */
    public Entry<K> withDelay(Duration delay) {
        return new Entry<>(key, priority, Objects.requireNonNull(delay, "delay"));
    }

    /**
     * The key naming the unit of work.
     *
     * @return the key, or {@code null} if the entry was made for one (the enqueue refuses it)
     */
    public @Nullable K key() {
        return key;
    }

    /**
     * The priority: higher is claimed first.
     *
     * @return any {@code int}; 0 unless set
     */
    public int priority() {
        return priority;
    }

    /**
     * How long the item is held back after it is written, on the database clock.
     *
     * @return never negative, never longer than {@link ReactiveWorkQueue#MAX_DURATION};
     *         {@link Duration#ZERO} unless set
     */
    public Duration delay() {
        return delay;
    }

    /**
     * Whether {@code other} is an entry with an equal key, priority and delay.
     *
     * @param other any object, or {@code null}
     * @return {@code true} if key, priority and delay are equal
     */
    @Override
    public boolean equals(@Nullable Object other) {
        return other instanceof Entry<?> that
                && Objects.equals(key, that.key)
                && priority == that.priority
                && delay.equals(that.delay);
    }

    /**
     * A hash over key, priority and delay, consistent with {@link #equals}.
     *
     * @return the hash code
     */
    @Override
    public int hashCode() {
        return Objects.hash(key, priority, delay);
    }

    /**
     * The entry's properties by name, for logs.
     *
     * @return {@code Entry[key=..., priority=..., delay=...]}
     */
    @Override
    public String toString() {
        return "Entry[key=" + key + ", priority=" + priority + ", delay=" + delay + "]";
    }
}
