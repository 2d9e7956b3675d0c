package io.workqueue.blocking;

import reactor.blockhound.BlockHound;
import reactor.blockhound.integration.BlockHoundIntegration;

/**
 * The one blocking call the test suite allows on a non-blocking thread: cancelling a timer task.
 *
 * <p>Cancelling a Reactor timer ({@code Mono.delay}, {@code Flux.interval}) removes its task from the
 * scheduler's delay queue under a {@code ReentrantLock}, held for a heap operation. When another
 * thread holds the lock at that moment the canceller parks briefly, which BlockHound reports. It is
 * not I/O and cannot wait on anything slow, and every wakeup or lost connection on a driver thread
 * cancels a timer, so the suite would otherwise fail at random (seen: a listener whose health-check
 * interval was cancelled as its connection died).
 */
public final class SchedulerCancellationIntegration implements BlockHoundIntegration {
    @Override
    public void applyTo(BlockHound.Builder builder) {
        builder.allowBlockingCallsInside("java.util.concurrent.ScheduledThreadPoolExecutor$ScheduledFutureTask", "cancel");
    }
}
