package io.workqueue.testing;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import reactor.core.Disposable;
import reactor.core.scheduler.Scheduler;

/**
 * A scheduler that counts the delayed tasks asked of it and passes everything to another: for
 * tests that hold a component to a number of timers (or thread wakeups) rather than to a timing.
 */
public final class CountingScheduler implements Scheduler {
    private final Scheduler scheduler;
    private final AtomicInteger delayed;

    /** Passes everything to {@code scheduler}, adding one to {@code delayed} for every delayed task. */
    public CountingScheduler(Scheduler scheduler, AtomicInteger delayed) {
        this.scheduler = scheduler;
        this.delayed = delayed;
    }

    @Override
    public Disposable schedule(Runnable task) {
        return scheduler.schedule(task);
    }

    @Override
    public Disposable schedule(Runnable task, long delay, TimeUnit unit) {
        delayed.incrementAndGet();
        return scheduler.schedule(task, delay, unit);
    }

    @Override
    public long now(TimeUnit unit) {
        return scheduler.now(unit);
    }

    @Override
    public Worker createWorker() {
        return scheduler.createWorker();
    }

    @Override
    public boolean isDisposed() {
        return scheduler.isDisposed();
    }
}
