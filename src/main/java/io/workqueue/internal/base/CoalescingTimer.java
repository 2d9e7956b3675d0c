package io.workqueue.internal.base;

import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.Exceptions;
import reactor.core.scheduler.Scheduler;

/**
 * A {@link Scheduler} for timeouts and waits that are mostly cancelled before they are due: it
 * keeps its delayed tasks itself and arms one task on the underlying scheduler, for the earliest of
 * them, so that scheduling a task due later than that one, or cancelling any, touches no thread.
 *
 * <p>Why: a queue instance arms a timer for every wait (its poll), every claim round and every
 * write (their timeouts), and nearly all of them are cancelled well before they are due. On
 * Reactor's parallel scheduler each of those lands alone in a worker's empty delay queue and wakes
 * its thread, which then parks again: about 2.4 thread wakeups for every wake-driven claim
 * (docs/benchmarks/fleet/ANALYSIS.md), and every round of {@code process()} arms two such timeouts
 * (docs/benchmarks/handler-scheduler/coalescing-timer-ab: 9-14 % of the client's CPU per item at
 * claims of one).
 * Here a task due after the armed one only joins a sorted map, and a cancelled one only leaves it;
 * the armed task, when it runs, starts every task then due, in deadline order, and arms the next.
 *
 * <p>Deadlines are read on {@code clock} (nanoseconds; {@link System#nanoTime} in production, so a
 * wall clock that steps changes nothing), and the underlying scheduler is asked to wait the same
 * span: an armed task never runs before its deadline on {@code clock} unless the two disagree, and
 * one that finds nothing due yet arms again for what is left. Immediate and periodic tasks, workers
 * and {@link #now} go straight to the underlying scheduler, which keeps its lifecycle: disposing
 * this disposes nothing, and a task scheduled once the underlying scheduler is disposed is refused
 * with {@link RejectedExecutionException}, as the scheduler itself would. Due tasks run one after
 * another on the underlying scheduler's thread, so each must be short, as timer tasks are; one that
 * throws is logged and the rest still run. Thread-safe and lock-free.
 */
public final class CoalescingTimer implements Scheduler {
    private static final Logger log = LoggerFactory.getLogger(CoalescingTimer.class);

    private final Scheduler underlying;
    private final LongSupplier clock;
    /** Tasks waiting for their deadline, by (deadline, sequence): in deadline order, ties in the order scheduled. */
    private final ConcurrentSkipListMap<Due, Runnable> waiting = new ConcurrentSkipListMap<>();
    private final AtomicLong sequence = new AtomicLong();
    /** The task armed on the underlying scheduler, or null when none is. */
    private final AtomicReference<@Nullable Armed> armed = new AtomicReference<>();

    /** A place in the waiting map. */
    private record Due(long deadlineNanos, long sequence) implements Comparable<Due> {
        @Override
        public int compareTo(Due other) {
            // Deadlines compared by their difference, as System.nanoTime requires.
            long byDeadline = deadlineNanos - other.deadlineNanos;
            return byDeadline != 0 ? (byDeadline < 0 ? -1 : 1) : Long.compare(sequence, other.sequence);
        }
    }

    /** One task armed on the underlying scheduler, for {@code deadlineNanos}. */
    private static final class Armed {
        final long deadlineNanos;
        /** Set once the underlying task exists; null before. */
        volatile @Nullable Disposable task;
        /** Another arm replaced this one: whoever sets or sees {@link #task} disposes it. */
        volatile boolean replaced;

        Armed(long deadlineNanos) {
            this.deadlineNanos = deadlineNanos;
        }

        void dispose() {
            replaced = true;
            Disposable set = task;
            if (set != null) {
                set.dispose();
            }
        }
    }

    /**
     * @param underlying the scheduler that runs the armed task, and everything this does not keep
     * @param clock      nanoseconds, on the time base {@code underlying} waits in
     */
    public CoalescingTimer(Scheduler underlying, LongSupplier clock) {
        this.underlying = underlying;
        this.clock = clock;
    }

    /** Over {@code underlying}, with deadlines on {@link System#nanoTime}: for a scheduler that waits in real time. */
    public static CoalescingTimer inRealTime(Scheduler underlying) {
        return new CoalescingTimer(underlying, System::nanoTime);
    }

    @Override
    public Disposable schedule(Runnable task) {
        return underlying.schedule(task);
    }

    @Override
    public Disposable schedule(Runnable task, long delay, TimeUnit unit) {
        if (underlying.isDisposed()) {
            throw Exceptions.failWithRejected();
        }
        long delayNanos = Math.max(0, unit.toNanos(delay));
        Due due = new Due(clock.getAsLong() + delayNanos, sequence.incrementAndGet());
        waiting.put(due, task);
        try {
            armFor(due.deadlineNanos());
        } catch (RejectedExecutionException e) {
            waiting.remove(due);
            throw e;
        }
        return () -> waiting.remove(due);
    }

    @Override
    public Disposable schedulePeriodically(Runnable task, long initialDelay, long period, TimeUnit unit) {
        return underlying.schedulePeriodically(task, initialDelay, period, unit);
    }

    @Override
    public long now(TimeUnit unit) {
        return underlying.now(unit);
    }

    @Override
    public Worker createWorker() {
        return underlying.createWorker();
    }

    @Override
    public boolean isDisposed() {
        return underlying.isDisposed();
    }

    @Override
    public void dispose() {
        // The underlying scheduler is not this one's to dispose; what waits here is dropped.
        waiting.clear();
        Armed current = armed.getAndSet(null);
        if (current != null) {
            current.dispose();
        }
    }

    @Override
    public void init() {
        underlying.init();
    }

    /** Makes sure a task is armed for {@code deadlineNanos} or earlier. */
    private void armFor(long deadlineNanos) {
        while (true) {
            Armed current = armed.get();
            if (current != null && current.deadlineNanos - deadlineNanos <= 0) {
                return; // the armed task runs first and arms the next
            }
            Armed next = new Armed(deadlineNanos);
            if (!armed.compareAndSet(current, next)) {
                continue;
            }
            if (current != null) {
                current.dispose();
            }
            Disposable task;
            try {
                task = underlying.schedule(() -> ran(next), Math.max(0, deadlineNanos - clock.getAsLong()),
                        TimeUnit.NANOSECONDS);
            } catch (RejectedExecutionException e) {
                armed.compareAndSet(next, null);
                throw e;
            }
            next.task = task;
            if (next.replaced) {
                task.dispose();
            }
            return;
        }
    }

    /** The armed task ran: start what is due, then arm for what is left. */
    private void ran(Armed self) {
        // Cleared first: a task scheduled from here on arms anew, and whatever was waiting when it
        // saw this one armed is in the map now, for the loop below or the arm after it.
        if (!armed.compareAndSet(self, null)) {
            return; // replaced by an earlier deadline's task, which took over
        }
        long now = clock.getAsLong();
        for (Map.Entry<Due, Runnable> first; (first = waiting.firstEntry()) != null; ) {
            if (first.getKey().deadlineNanos() - now > 0) {
                armFor(first.getKey().deadlineNanos());
                return;
            }
            if (waiting.remove(first.getKey(), first.getValue())) {
                run(first.getValue());
            }
        }
    }

    private static void run(Runnable task) {
        try {
            task.run();
        } catch (Throwable error) {
            Exceptions.throwIfJvmFatal(error);
            log.error("a timer task failed", error);
        }
    }
}
