package io.workqueue.testing;

import io.r2dbc.spi.ConnectionFactory;
import io.workqueue.Item;
import io.workqueue.ItemPage;
import io.workqueue.ItemState;
import io.workqueue.QueueItem;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueAdmin;
import io.workqueue.WorkQueueConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;

/**
 * Helpers for the tests of code that uses a work queue, against a real PostgreSQL: a queue on a table
 * of its own, what is pending in a queue, and every due item run once through a handler (as a
 * worker would, without one running). What River's {@code rivertest} and Oban's testing helpers give
 * their users.
 *
 * <pre>{@code
 * ReactiveWorkQueue<String> queue = WorkQueueTesting.queue(String.class, "emails");
 * service.signUp("ada@example.com").block();              // the code under test enqueues
 * WorkQueueTesting.assertPending(queue, "ada@example.com");
 * WorkQueueTesting.Drained<String> run = WorkQueueTesting.drain(queue, item -> mailer.send(item.key()));
 * assertEquals(List.of("ada@example.com"), run.completed());
 * }</pre>
 *
 * <p>Every method blocks until its work is done, at most {@link #TIMEOUT}: call them from a test's
 * own thread, never from a Reactor or Netty thread. The queues it makes and the ones it is handed
 * must be on {@link TestDatabase}'s server (or name a connection factory for the others).
 */
public final class WorkQueueTesting {
    /** The longest any helper waits for the database. */
    public static final Duration TIMEOUT = Duration.ofSeconds(30);
    /** The lease {@link #drain} claims with: longer than a test's handler should ever take. */
    public static final Duration DRAIN_LEASE = Duration.ofMinutes(5);

    private static final int PAGE = 500;

    private WorkQueueTesting() {}

    /**
     * A queue named {@code name} with keys of {@code keyType}, on a table of its own (a fresh prefix,
     * created on {@link TestDatabase}'s server), so tests cannot see each other's items.
     */
    public static <K> ReactiveWorkQueue<K> queue(Class<K> keyType, String name) {
        return queue(keyType, WorkQueueConfig.builder(name).tablePrefix(TestDatabase.createTable()).build());
    }

    /**
     * A queue of {@code config} over {@link TestDatabase#pool()}; its table must exist (a prefix from
     * {@link TestDatabase#createTable()}, or one the test applied the migrations to).
     */
    public static <K> ReactiveWorkQueue<K> queue(Class<K> keyType, WorkQueueConfig config) {
        return ReactiveWorkQueue.builder(TestDatabase.pool(), keyType).config(config).build();
    }

    /**
     * The keys pending in {@code queue} (enqueued and not completed: ready, delayed, leased or out of
     * attempts), decoded by the queue's codec, in claim order within each state. Reads through
     * {@link TestDatabase#pool()}.
     */
    public static <K> List<K> pending(ReactiveWorkQueue<K> queue) {
        return pending(queue, TestDatabase.pool());
    }

    /** {@link #pending(ReactiveWorkQueue)} reading through {@code connectionFactory}. */
    public static <K> List<K> pending(ReactiveWorkQueue<K> queue, ConnectionFactory connectionFactory) {
        Objects.requireNonNull(queue, "queue");
        WorkQueueAdmin admin = WorkQueueAdmin.builder(connectionFactory)
                .tablePrefix(queue.config().tablePrefix())
                .queue(queue)
                .build();
        List<K> keys = new ArrayList<>();
        for (ItemState state : List.of(ItemState.READY, ItemState.DELAYED, ItemState.LEASED, ItemState.STALLED)) {
            String after = null;
            do {
                ItemPage page = Objects.requireNonNull(admin.items(queue.name(), state, after, PAGE).block(TIMEOUT));
                for (QueueItem item : page.items()) {
                    if (state == ItemState.LEASED && item.states().contains(ItemState.STALLED)) {
                        continue; // on its last attempt and leased: listed under both, counted once
                    }
                    keys.add(decoded(item));
                }
                after = page.next();
            } while (after != null);
        }
        return keys;
    }

    /**
     * Fails unless every one of {@code keys} is pending in {@code queue}, naming the ones missing and
     * what is pending.
     *
     * @throws AssertionError if one is not
     */
    @SafeVarargs
    public static <K> void assertPending(ReactiveWorkQueue<K> queue, K... keys) {
        List<K> pending = pending(queue);
        List<K> missing = Arrays.stream(keys).filter(key -> !pending.contains(key)).toList();
        if (!missing.isEmpty()) {
            throw new AssertionError("expected " + missing + " pending in queue " + queue.name() + ", but the pending keys"
                    + " are " + pending);
        }
    }

    /**
     * Fails if any of {@code keys} is pending in {@code queue}; with no keys, if anything is.
     *
     * @throws AssertionError naming what is pending that should not be
     */
    @SafeVarargs
    public static <K> void assertNotPending(ReactiveWorkQueue<K> queue, K... keys) {
        List<K> pending = pending(queue);
        List<K> found = keys.length == 0 ? pending : Arrays.stream(keys).filter(pending::contains).toList();
        if (!found.isEmpty()) {
            throw new AssertionError("expected " + (keys.length == 0 ? "nothing" : Arrays.toString(keys))
                    + " not pending in queue " + queue.name() + ", but " + found + (found.size() == 1 ? " is" : " are"));
        }
    }

    /**
     * Runs every item due in {@code queue} through {@code handler} once, as a worker would: claims
     * until nothing is due, completes each item whose handler's publisher completes, and, once
     * nothing is left, releases each whose publisher failed (or whose handler threw) with the error
     * as its cause and no delay: due again, one attempt used, not run twice by this drain. Items that
     * become due meanwhile (a handler enqueueing more) run too, once each; an item due again that
     * already ran (its key enqueued again while it ran) is handed back without running. Delayed and
     * leased items are left alone.
     *
     * @return the keys completed and the keys released, in the order they ran
     */
    public static <K> Drained<K> drain(ReactiveWorkQueue<K> queue, Function<Item<K>, ? extends Publisher<?>> handler) {
        Objects.requireNonNull(queue, "queue");
        Objects.requireNonNull(handler, "handler");
        List<K> completed = new ArrayList<>();
        List<K> failed = new ArrayList<>();
        List<Throwable> errors = new ArrayList<>();
        List<K> ran = new ArrayList<>();
        List<K> again = new ArrayList<>();
        while (true) {
            // Failed and re-run items stay leased until the end, so a claim never hands them out again.
            List<Item<K>> items = Objects.requireNonNull(queue.claim(0, DRAIN_LEASE).block(TIMEOUT));
            if (items.isEmpty()) {
                break;
            }
            for (Item<K> item : items) {
                if (ran.contains(item.key())) {
                    again.add(item.key());
                    continue;
                }
                ran.add(item.key());
                Throwable error = run(handler, item);
                if (error == null) {
                    queue.complete(List.of(item.key())).block(TIMEOUT);
                    completed.add(item.key());
                } else {
                    failed.add(item.key());
                    errors.add(error);
                }
            }
        }
        for (int i = 0; i < failed.size(); i++) {
            queue.release(Duration.ZERO, errors.get(i), List.of(failed.get(i))).block(TIMEOUT);
        }
        if (!again.isEmpty()) {
            queue.release(Duration.ZERO, null, again).block(TIMEOUT);
        }
        return new Drained<>(completed, failed);
    }

    /** What {@link #drain} did: the keys it completed and the keys whose handler failed, in order. */
    public static final class Drained<K> {
        private final List<K> completed;
        private final List<K> failed;

        Drained(Collection<K> completed, Collection<K> failed) {
            this.completed = List.copyOf(completed);
            this.failed = List.copyOf(failed);
        }

        /** The keys whose handler succeeded, completed. */
        public List<K> completed() {
            return completed;
        }

        /** The keys whose handler failed, released with the error as their last error. */
        public List<K> failed() {
            return failed;
        }

        @Override
        public String toString() {
            return "Drained[completed=" + completed + ", failed=" + failed + "]";
        }
    }

    private static <K> @Nullable Throwable run(Function<Item<K>, ? extends Publisher<?>> handler, Item<K> item) {
        try {
            Publisher<?> work = Objects.requireNonNull(handler.apply(item), "the handler returned null");
            Flux.from(work).then().block(TIMEOUT);
            return null;
        } catch (RuntimeException e) {
            return e;
        } catch (Error e) {
            if (e instanceof VirtualMachineError || e instanceof LinkageError) {
                throw e;
            }
            return e;
        }
    }

    @SuppressWarnings("unchecked")
    private static <K> K decoded(QueueItem item) {
        if (item.keyDecodingError() != null) {
            throw new AssertionError("the stored key " + item.storedKey() + " no longer decodes: " + item.keyDecodingError());
        }
        return (K) item.key();
    }
}
