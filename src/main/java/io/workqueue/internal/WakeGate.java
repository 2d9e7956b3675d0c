package io.workqueue.internal;

import io.workqueue.internal.base.Durations;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoSink;
import reactor.core.scheduler.Scheduler;

/**
 * Turns a stream of "there may be work" signals, and the instance's own {@link #wake}s, into
 * completions of {@code awaitWork}, at most one release per {@code minInterval}.
 *
 * <p>A wake that arrives inside the floor is held and released when the floor ends; a wake that
 * arrives while nobody waits is latched for the next wait. Either way the last wake of a burst is
 * never lost, and a burst costs at most one extra release per interval. A release completes every
 * wait pending at that moment. The source is subscribed on the first wait and stays subscribed;
 * its completion or error only ends wakeups (waits then run out their poll).
 *
 * <p>Thread-safe: state changes happen under the instance lock, and sinks are completed outside it.
 */
public final class WakeGate {
    private static final Logger log = LoggerFactory.getLogger(WakeGate.class);

    private final @Nullable Publisher<?> source;
    private final long minIntervalNanos;
    private final Scheduler timer;

    // All guarded by "this".
    private final Set<MonoSink<Void>> waiters = new LinkedHashSet<>();
    private boolean subscribed;
    private boolean latched;
    private long lastReleaseNanos;
    private boolean released;
    private @Nullable Disposable heldRelease;

    /**
     * @param source      wakeup signals, or {@code null} for none (waits then end at their poll or
     *                    at a {@link #wake})
     * @param minInterval the floor between two releases; longer than
     *                    {@link io.workqueue.ReactiveWorkQueue#MAX_DURATION} is that maximum
     * @param timer       the clock and scheduler for polls and held wakes
     */
    public WakeGate(@Nullable Publisher<?> source, Duration minInterval, Scheduler timer) {
        this.source = source;
        // Capped, the floor fits a long of nanoseconds with room to add it to the timer's clock.
        this.minIntervalNanos = Durations.capped(minInterval).toNanos();
        this.timer = timer;
    }

    /**
     * Completes on the next release or after {@code poll} (at most
     * {@link io.workqueue.ReactiveWorkQueue#MAX_DURATION}), whichever comes first. Cold;
     * cancelling it withdraws the wait.
     */
    public Mono<Void> await(Duration poll) {
        // Reactor's timers take a long of nanoseconds, which a longer poll would overflow.
        Duration bounded = Durations.capped(poll);
        Mono<Void> wake = Mono.create(sink -> {
            boolean now;
            synchronized (this) {
                connectIfNeeded();
                now = latched && floorPassed();
                if (now) {
                    latched = false;
                    markReleased();
                } else {
                    waiters.add(sink);
                    if (latched) {
                        holdUntilFloor();
                    }
                }
            }
            if (now) {
                sink.success();
            } else {
                sink.onDispose(() -> {
                    synchronized (this) {
                        waiters.remove(sink);
                    }
                });
            }
        });
        return Mono.firstWithSignal(wake, Mono.delay(bounded, timer).then());
    }

    /**
     * A wake from within the instance, with or without a source: there is work that no notification
     * announced (a look found items due behind the claim cursors). Held and latched like any other
     * wake.
     */
    public void wake() {
        onWake();
    }

    private void connectIfNeeded() {
        if (subscribed || source == null) {
            return;
        }
        subscribed = true;
        Flux.from(source).subscribe(
                signal -> onWake(),
                error -> log.warn("wakeup source failed; waits fall back to their poll", error),
                () -> log.info("wakeup source completed; waits fall back to their poll"));
    }

    private void onWake() {
        List<MonoSink<Void>> toRelease;
        synchronized (this) {
            if (!floorPassed()) {
                latched = true;
                holdUntilFloor();
                return;
            }
            if (waiters.isEmpty()) {
                latched = true;
                return;
            }
            toRelease = takeWaiters();
        }
        toRelease.forEach(MonoSink::success);
    }

    private void releaseHeld() {
        List<MonoSink<Void>> toRelease;
        synchronized (this) {
            heldRelease = null;
            if (!latched || waiters.isEmpty()) {
                return; // stays latched for the next wait
            }
            latched = false;
            toRelease = takeWaiters();
        }
        toRelease.forEach(MonoSink::success);
    }

    private List<MonoSink<Void>> takeWaiters() {
        List<MonoSink<Void>> taken = new ArrayList<>(waiters);
        waiters.clear();
        markReleased();
        return taken;
    }

    private void holdUntilFloor() {
        if (heldRelease == null) {
            long remaining = lastReleaseNanos + minIntervalNanos - timer.now(TimeUnit.NANOSECONDS);
            heldRelease = timer.schedule(this::releaseHeld, Math.max(0, remaining), TimeUnit.NANOSECONDS);
        }
    }

    private boolean floorPassed() {
        return !released || timer.now(TimeUnit.NANOSECONDS) - lastReleaseNanos >= minIntervalNanos;
    }

    private void markReleased() {
        released = true;
        lastReleaseNanos = timer.now(TimeUnit.NANOSECONDS);
    }
}
