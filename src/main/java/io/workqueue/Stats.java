package io.workqueue;

import java.time.Duration;

/**
 * A health snapshot of one logical queue, read in one statement on the database clock.
 *
 * @param pending        items not completed
 * @param ready          items a claim would hand out now (the claim's own predicate)
 * @param leased         pending items with a live lease
 * @param stalled        pending items out of attempts ({@code 0} when attempts are unlimited)
 * @param completed      completed items not yet reaped
 * @param oldestReadyAge how long the longest-waiting ready item has been claimable (available,
 *                       and any lease on it lapsed), {@link Duration#ZERO} when nothing is ready; the number to alert on, since depth alone cannot
 *                       tell a deep moving queue from a deep stuck one
 */
public record Stats(long pending, long ready, long leased, long stalled, long completed, Duration oldestReadyAge) {}
