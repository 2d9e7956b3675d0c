package io.workqueue;

/**
 * Where an item stands, as {@link WorkQueueAdmin} lists items. Each state is decided on the
 * database clock by the very condition the queue itself uses: an item listed as {@link #READY} is
 * one a claim would hand out now, and the count of each state but {@link #DELAYED} is the matching
 * field of {@link Stats}.
 *
 * <p>The states of a pending item do not exclude each other in one case, as in {@link Stats}: an
 * item leased for its last attempt is both {@link #LEASED} and {@link #STALLED} (if its run fails
 * it will not be claimed again). Otherwise every pending item is in exactly one of
 * {@link #READY}, {@link #DELAYED}, {@link #LEASED} and {@link #STALLED}.
 */
public enum ItemState {
    /**
     * Due: pending, not leased (never, released, or lease lapsed), available, and within its
     * attempts. A claim hands these out, in claim order. Counted by {@link Stats#ready()}.
     */
    READY,
    /**
     * Pending, not leased, within its attempts, but not available yet (enqueued or released with a
     * delay): it becomes {@link #READY} when its time comes, with nothing else happening to it.
     */
    DELAYED,
    /** Pending with a live lease: a worker holds it now. Counted by {@link Stats#leased()}. */
    LEASED,
    /**
     * Pending and out of attempts ({@link WorkQueueConfig#maxAttempts()} reached; never with
     * unlimited attempts): no claim hands it out again until a person retries, removes or
     * re-enqueues it. Counted by {@link Stats#stalled()}.
     */
    STALLED,
    /** Completed and not yet reaped. Counted by {@link Stats#completed()}. */
    COMPLETED
}
