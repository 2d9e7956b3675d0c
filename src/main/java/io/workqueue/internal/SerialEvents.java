package io.workqueue.internal;

import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * Events run one at a time, in the order they were queued, on whichever calling thread finds none
 * running; a thread that finds one running queues its event and returns at once. State that only
 * events touch needs no lock then, and no caller ever waits for another (the callers are often the
 * driver's event loops). After each run of the events queued so far, {@code afterEvents} runs, as
 * serially.
 *
 * <p>A failure of an event or of {@code afterEvents} goes to {@code failed}, and the events behind
 * it still run: a drain that ended owing events would leave every later one queued and unrun. What
 * {@code failed} throws ends the drain in that state, so it should throw only what the JVM cannot
 * survive. Thread-safe.
 */
final class SerialEvents {
    private final Queue<Runnable> events = new ConcurrentLinkedQueue<>();
    /** Events queued and not yet drained: the thread that raises it from zero drains them. */
    private final AtomicInteger owed = new AtomicInteger();
    private final Runnable afterEvents;
    private final Consumer<Throwable> failed;

    /**
     * @param afterEvents runs after each run of queued events
     * @param failed      takes what an event or {@code afterEvents} threw
     */
    SerialEvents(Runnable afterEvents, Consumer<Throwable> failed) {
        this.afterEvents = afterEvents;
        this.failed = failed;
    }

    /** Runs {@code event} after the events queued before it: on this thread now, or on the thread running them. */
    void run(Runnable event) {
        events.offer(event);
        if (owed.getAndIncrement() != 0) {
            return;
        }
        do {
            for (Runnable next; (next = events.poll()) != null; ) {
                try {
                    next.run();
                } catch (Throwable error) {
                    failed.accept(error);
                }
            }
            try {
                afterEvents.run();
            } catch (Throwable error) {
                failed.accept(error);
            }
        } while (owed.decrementAndGet() != 0);
    }
}
