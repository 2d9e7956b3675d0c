package io.workqueue;

import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * One page of the items of a queue in one state, from
 * {@link WorkQueueAdmin#items(String, ItemState, String, int)}, in the state's listing order.
 *
 * <p>A page may hold fewer items than asked for and still have a {@link #next()}: a page reads at
 * most a bounded stretch of the queue's index ({@link WorkQueueAdmin#SCAN_BUDGET} entries), so
 * that a state with few items in a long queue (a handful of stalled items among a million ready
 * ones) costs each page the same bounded time instead of one page the whole queue. Following
 * {@link #next()} until it is {@code null} visits every item that stayed in the state meanwhile,
 * once.
 *
 * <p>Immutable and thread-safe.
 */
public final class ItemPage {
    private final List<QueueItem> items;
    private final @Nullable String next;

    private ItemPage(List<QueueItem> items, @Nullable String next) {
        this.items = List.copyOf(items);
        this.next = next;
    }

    /**
     * A page of {@code items} continued by the cursor {@code next}. The admin makes pages; this
     * factory exists for tests, fakes and other implementations of {@link WorkQueueAdmin}.
     *
     * @param items the items, in listing order; copied, and neither it nor an element may be
     *              {@code null}
     * @param next  the cursor of the page that follows, or {@code null} when nothing follows
     * @return the page
     * @throws NullPointerException if {@code items} or one of its elements is {@code null}
     */
    public static ItemPage of(List<QueueItem> items, @Nullable String next) {
        return new ItemPage(Objects.requireNonNull(items, "items"), next);
    }

    /**
     * The items, in listing order.
     *
     * @return an unmodifiable list of at most the page size asked for; may be empty, even when
     *         {@link #next()} is not {@code null}
     */
    public List<QueueItem> items() {
        return items;
    }

    /**
     * The opaque cursor to pass as {@code after} for the page that follows, or {@code null} when the
     * listing reached the end. It names a position in the listing order, not an item, so it stays
     * valid whatever happens to the items meanwhile.
     *
     * @return the cursor to pass as {@code after} to
     *         {@link WorkQueueAdmin#items(String, ItemState, String, int)} for the same queue and
     *         state, or {@code null} at the end of the listing
     */
    public @Nullable String next() {
        return next;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof ItemPage that && items.equals(that.items) && Objects.equals(next, that.next);
    }

    @Override
    public int hashCode() {
        return Objects.hash(items, next);
    }

    @Override
    public String toString() {
        return "ItemPage[items=" + items + ", next=" + next + "]";
    }
}
