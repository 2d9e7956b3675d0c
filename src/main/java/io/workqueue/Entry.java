package io.workqueue;

import io.workqueue.internal.Durations;
import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * One key to enqueue, with its priority and how long to hold it back.
 *
 * <p>Higher priorities are claimed first. The delay is measured on the database clock from the
 * moment the row is written; a negative delay is treated as zero, and one longer than
 * {@link ReactiveWorkQueue#MAX_DURATION} as that maximum ("forever"). A {@code null} key is allowed
 * here so that it can be reported as {@link InvalidKeyException.Reason#NULL} by the enqueue that
 * carries it.
 *
 * @param key      the key naming the unit of work
 * @param priority higher runs first; any {@code int}
 * @param delay    not available before this much time has passed; never negative, never longer
 *                 than {@link ReactiveWorkQueue#MAX_DURATION}
 * @param <K>      the key type
 */
public record Entry<K>(@Nullable K key, int priority, Duration delay) {

    /**
     * Normalises the delay: {@code null} or negative becomes zero, longer than
     * {@link ReactiveWorkQueue#MAX_DURATION} becomes {@code MAX_DURATION}.
     */
    public Entry {
        delay = delay == null || delay.isNegative() ? Duration.ZERO : Durations.capped(delay);
    }

    /** An entry with priority 0 and no delay. */
    public static <K> Entry<K> of(@Nullable K key) {
        return new Entry<>(key, 0, Duration.ZERO);
    }

    /** This entry with another priority. */
    public Entry<K> withPriority(int priority) {
        return new Entry<>(key, priority, delay);
    }

    /**
     * This entry with another delay; a negative delay becomes zero, one longer than
     * {@link ReactiveWorkQueue#MAX_DURATION} becomes {@code MAX_DURATION}.
     */
    public Entry<K> withDelay(Duration delay) {
        return new Entry<>(key, priority, Objects.requireNonNull(delay, "delay"));
    }
}
