package io.workqueue.internal;

import java.time.Duration;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;
import org.jspecify.annotations.Nullable;
import reactor.core.scheduler.Scheduler;

/**
 * Hands a worker's handler calls to the threads of its handler scheduler with as few hand-offs as
 * the calls allow, without letting a call that blocks hold up the others.
 *
 * <p>Calls wait in one queue, taken in order by <em>runners</em>: tasks on the scheduler that make
 * call after call until the queue is empty. A batch of quick calls therefore costs one hand-off
 * (one thread woken) rather than one per call. A call that blocks would hold up every call behind
 * it on its runner, so a watchdog on the timer looks every {@code patience} while calls wait: if no
 * runner has started a call since its last look, the runners are stuck (blocked, or busy with long
 * calls), and it doubles them (at least one more, never more than the calls waiting, never more
 * than {@code maxRunners} in all, the worker's concurrency). A look that finds the runners it
 * added busy starting calls waits for the next, so with concurrency 16, sixteen calls that block
 * are all under way after about eight looks (a few patiences); calls that take longer than
 * {@code patience} without blocking (CPU-bound ones) spread over more runners the same way, while
 * runners that keep starting calls (a batch of quick ones, however long the batch) get no help
 * they do not need.
 *
 * <p>{@link #stop(Call)} cancels a call that has not started and interrupts, as
 * {@code subscribeOn} does on cancellation, one still in progress; a runner clears an interrupt
 * meant for its previous call before it makes the next one. If the scheduler refuses a runner
 * (shut down, or saturated) and none is left, the waiting calls are handed to {@code refused}.
 *
 * <p>Thread-safe: the worker's loop submits and stops calls, runners and the watchdog run on other
 * threads. {@code startedAll} runs on whichever thread left no call waiting, after that call.
 *
 * @param <C> the worker's calls
 */
final class HandlerCalls<C extends HandlerCalls.Call> {
    /** One call: made at most once, on a runner's thread; stoppable from any thread. */
    abstract static class Call {
        private static final int WAITING = 0;
        private static final int CALLING = 1;
        private static final int DONE = 2;
        private static final int INTERRUPTING = 3;
        private static final int INTERRUPTED = 4;
        private static final int CANCELLED = 5;

        // For HandlerCalls only (package-private because it reaches them through a type variable).
        final AtomicInteger state = new AtomicInteger(WAITING);
        volatile @Nullable Thread caller;

        /** The call itself; must not throw. */
        abstract void call();
    }

    private final Scheduler threads;
    private final int maxRunners;
    private final Scheduler timer;
    private final long patienceNanos;
    private final Runnable startedAll;
    private final BiConsumer<C, Throwable> refused;
    private final Queue<C> waiting = new ConcurrentLinkedQueue<>();
    /** Calls submitted and neither started nor stopped. */
    private final AtomicInteger unstarted = new AtomicInteger();
    private final AtomicInteger runners = new AtomicInteger();
    /** Calls started so far, so that the watchdog can tell runners that progress from stuck ones. */
    private final AtomicLong started = new AtomicLong();
    private final AtomicBoolean watching = new AtomicBoolean();
    /** {@link #started} at the watchdog's last look; read and written by the watchdog only. */
    private long startedAtLastLook = -1;

    HandlerCalls(Scheduler threads, int maxRunners, Scheduler timer, Duration patience, Runnable startedAll,
            BiConsumer<C, Throwable> refused) {
        this.threads = threads;
        this.maxRunners = maxRunners;
        this.timer = timer;
        this.patienceNanos = patience.toNanos();
        this.startedAll = startedAll;
        this.refused = refused;
    }

    /** Queues {@code call}; starts a runner if none is running, and the watchdog if it is not looking. */
    void submit(C call) {
        submitAll(List.of(call));
    }

    /**
     * Queues {@code calls} in order, all before a runner may start: a runner started for the first
     * would preempt the submitting thread as it wakes (on a busy machine the woken thread often
     * takes the submitter's core), make that one call, find the queue empty and end, so that
     * submitting one by one would cost one hand-off per call instead of one per batch.
     */
    void submitAll(List<? extends C> calls) {
        if (calls.isEmpty()) {
            return;
        }
        // Runners are only ever added here (by this one submitting thread) and by the watchdog,
        // which runs only while watching; a runner counts itself until it has no call in progress.
        boolean runnerBusy = runners.get() > 0;
        unstarted.addAndGet(calls.size());
        waiting.addAll(calls);
        if (!runnerBusy) {
            addRunner();
        }
        // One call for an idle pool cannot wait behind another, so it needs no watchdog (which
        // costs the timer's thread a wake-up or two): a busy runner, or a second call, does.
        if (runnerBusy || calls.size() > 1) {
            watch();
        }
    }

    /**
     * Whether calls are still being handed out: some wait for a runner, and more runners may
     * still start. The worker holds back its next round meanwhile, so that a batch of calls that
     * finish at once is acknowledged by one round.
     */
    boolean handingOut() {
        return unstarted.get() > 0 && runners.get() < maxRunners;
    }

    /**
     * Cancels {@code call} if it has not started, interrupts the thread making it if it is under
     * way, and does nothing once it has returned.
     */
    void stop(C call) {
        while (true) {
            int state = call.state.get();
            if (state == Call.WAITING) {
                if (call.state.compareAndSet(Call.WAITING, Call.CANCELLED)) {
                    waiting.remove(call);
                    leftWaiting();
                    return;
                }
            } else if (state == Call.CALLING) {
                if (call.state.compareAndSet(Call.CALLING, Call.INTERRUPTING)) {
                    Thread caller = call.caller;
                    // Not this thread: the worker's loop may be running inside that very call.
                    if (caller != null && caller != Thread.currentThread()) {
                        caller.interrupt();
                    }
                    call.state.set(Call.INTERRUPTED);
                    return;
                }
            } else {
                return;
            }
        }
    }

    // ---------------------------------------------------------------- runners

    /** Starts one more runner if below the cap; false if at the cap or refused. */
    private boolean addRunner() {
        while (true) {
            int count = runners.get();
            if (count >= maxRunners) {
                return false;
            }
            if (runners.compareAndSet(count, count + 1)) {
                break;
            }
        }
        try {
            threads.schedule(this::run);
            return true;
        } catch (RejectedExecutionException e) {
            if (runners.decrementAndGet() == 0) {
                refuseWaiting(e);
            }
            return false;
        }
    }

    /** A runner: makes waiting calls one after another until none is left. */
    private void run() {
        while (true) {
            C call = waiting.poll();
            if (call == null) {
                runners.decrementAndGet();
                // A call queued between the poll and the decrement saw a runner and started none.
                if (waiting.isEmpty() || !rejoin()) {
                    return;
                }
                continue;
            }
            call.caller = Thread.currentThread();
            if (!call.state.compareAndSet(Call.WAITING, Call.CALLING)) {
                call.caller = null;
                continue; // stopped while it waited
            }
            leftWaiting();
            started.incrementAndGet();
            try {
                call.call();
            } finally {
                if (!call.state.compareAndSet(Call.CALLING, Call.DONE)) {
                    // stop() is interrupting this thread for this call: let it finish, then clear
                    // the interrupt so that it does not reach the next call.
                    while (call.state.get() == Call.INTERRUPTING) {
                        // a few instructions away: stop() only calls interrupt() in between
                    }
                    Thread.interrupted();
                }
                call.caller = null;
            }
            if (unstarted.get() == 0) {
                startedAll.run();
            }
        }
    }

    /** Counts this runner back in after it had counted itself out; false if that would pass the cap. */
    private boolean rejoin() {
        while (true) {
            int count = runners.get();
            if (count >= maxRunners) {
                return false;
            }
            if (runners.compareAndSet(count, count + 1)) {
                return true;
            }
        }
    }

    private void leftWaiting() {
        unstarted.decrementAndGet();
    }

    /** No runner is left to make the waiting calls, and the scheduler refuses new ones. */
    private void refuseWaiting(Throwable error) {
        for (C call; (call = waiting.poll()) != null; ) {
            if (call.state.compareAndSet(Call.WAITING, Call.CANCELLED)) {
                leftWaiting();
                refused.accept(call, error);
            }
        }
    }

    // ---------------------------------------------------------------- watchdog

    private void watch() {
        if (watching.compareAndSet(false, true)) {
            startedAtLastLook = started.get();
            schedule();
        }
    }

    private void schedule() {
        try {
            timer.schedule(this::look, patienceNanos, TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException e) {
            watching.set(false);
        }
    }

    /**
     * Every {@code patience} while calls wait: if no call has started since the last look, every
     * runner is in a call that has taken at least that long, so add runners.
     */
    private void look() {
        if (unstarted.get() == 0) {
            watching.set(false);
            // A call queued after that read saw the watchdog still looking and did not start it.
            if (unstarted.get() > 0) {
                watch();
            }
            return;
        }
        if (runners.get() >= maxRunners) {
            // Nothing to add: the runners take the waiting calls as they come free. The next
            // submission looks again.
            watching.set(false);
            return;
        }
        long now = started.get();
        if (now == startedAtLastLook) {
            int wanted = Math.min(unstarted.get(), Math.max(1, runners.get()));
            for (int i = 0; i < wanted && addRunner(); i++) {
                // each added runner takes one waiting call
            }
        }
        startedAtLastLook = now;
        schedule();
    }
}
