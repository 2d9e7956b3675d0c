package io.workqueue;

/**
 * One leased unit of work, as handed out by a claim.
 *
 * @param key       the key that names the work
 * @param priority  its priority when it was claimed
 * @param attempts  how many times it has been claimed, this claim included (1 on the first claim)
 * @param reclaimed {@code true} when this claim took over a lease that had lapsed, so another
 *                  worker may still be doing the same work; {@code false} after a release, a
 *                  completion or a fresh enqueue
 * @param <K>       the key type
 */
public record Item<K>(K key, int priority, int attempts, boolean reclaimed) {}
