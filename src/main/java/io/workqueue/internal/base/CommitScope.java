package io.workqueue.internal.base;

import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;
import reactor.util.context.ContextView;

/**
 * One caller's transaction, from its start to its commit, as {@code ReactiveWorkQueue.announceAfterCommit}
 * brackets it: carried in the Reactor context of everything the transaction runs, so that a
 * transactional enqueue inside it leaves its wakeup here instead of handing its transaction over to
 * be asked about. When the bracketed {@code Mono} completes, the caller's transaction has committed
 * (that is the caller's promise), and every announcement left here runs, once each; when it fails or
 * is cancelled, none does.
 *
 * <p>Nothing rests on the promise but promptness: an announcement for a transaction that did not
 * commit wakes listeners who then find nothing, and one never made leaves the rows to the poll.
 *
 * <p>Thread-safe: enqueues inside one transaction may run on several threads.
 */
public final class CommitScope {
    /** The context key: this class, which nothing outside the library can name. */
    private static final Class<CommitScope> KEY = CommitScope.class;

    private static final int RUNNING = 0;
    private static final int COMMITTED = 1;
    private static final int FAILED = 2;

    /** By announcer (a queue's notifier, say), so each announces once however often it wrote. */
    private final Map<Object, Runnable> announcements = new ConcurrentHashMap<>();
    /** {@link #RUNNING}, then {@link #COMMITTED} or {@link #FAILED}: the first end counts. */
    private final AtomicInteger state = new AtomicInteger(RUNNING);

    private CommitScope() {}

    /**
     * {@code transaction} inside a scope of its own, unless it already runs inside one: the
     * outermost bracket announces, when the whole of it has completed. Cold; a {@code null}
     * transaction fails the subscription with a {@code NullPointerException}.
     */
    public static <T> Mono<T> around(@Nullable Mono<T> transaction) {
        return Mono.deferContextual(context -> {
            Mono<T> bracketed = Objects.requireNonNull(transaction, "transaction");
            if (context.hasKey(KEY)) {
                return bracketed;
            }
            CommitScope scope = new CommitScope();
            return bracketed
                    .doOnSuccess(value -> scope.ended(true))
                    .doOnError(error -> scope.ended(false))
                    .doOnCancel(() -> scope.ended(false))
                    .contextWrite(c -> c.put(KEY, scope));
        });
    }

    /** The scope {@code context} runs in, or {@code null} outside any. */
    public static @Nullable CommitScope in(ContextView context) {
        return context.getOrDefault(KEY, null);
    }

    /**
     * Runs {@code announce} once the transaction has committed, unless {@code announcer} left one
     * already. A write that completes after the bracket ended (a subscription that outlived it)
     * is announced at once if the bracket completed, and not at all if it failed.
     */
    public void onCommit(Object announcer, Runnable announce) {
        if (announcements.putIfAbsent(announcer, announce) != null) {
            return;
        }
        int ended = state.get();
        if (ended != RUNNING && announcements.remove(announcer, announce) && ended == COMMITTED) {
            announce.run();
        }
    }

    private void ended(boolean completed) {
        // A cancel that follows the completion (an operator letting go of its source) changes nothing.
        if (!state.compareAndSet(RUNNING, completed ? COMMITTED : FAILED)) {
            return;
        }
        // Each announcement runs once: whichever removes it, this or a late onCommit, runs it.
        for (Object announcer : announcements.keySet()) {
            Runnable announce = announcements.remove(announcer);
            if (announce != null && completed) {
                announce.run();
            }
        }
    }
}
