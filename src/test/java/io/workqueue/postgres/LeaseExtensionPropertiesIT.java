package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.testing.Queues;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.lifecycle.BeforeContainer;

/** Random histories of claims and lapses on one key, then an extension or a snooze by one of its claims. */
class LeaseExtensionPropertiesIT {
    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final Duration LEASE = Duration.ofMinutes(5);
    private static String prefix;

    @BeforeContainer
    static void createTable() {
        prefix = TestDatabase.createTable();
    }

    private static Item<String> claimOne(ReactiveWorkQueue<String> queue) {
        List<Item<String>> items = queue.claim(1, LEASE).block(WAIT);
        assertEquals(1, items.size(), "one item claimed");
        return items.get(0);
    }

    private static void lapse(ReactiveWorkQueue<String> queue) {
        Queues.update(prefix, queue, "k", "lease_until = now() - INTERVAL '1 second'");
    }

    /**
     * Invariant, whatever interleaving of claims, lapses, extensions and snoozes: an extension or
     * a snooze succeeds exactly when its caller's claim is the item's latest and its lease live,
     * and it never changes the lease of a claim that is not the caller's.
     */
    @Property(tries = 30)
    void onlyTheLatestLiveClaimExtends(@ForAll @IntRange(min = 1, max = 6) int claims,
            @ForAll @IntRange(min = 0, max = 5) int askingClaim, @ForAll boolean lapseLatest, @ForAll boolean snooze) {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "extend-property");
        queue.enqueueKeys("k").block(WAIT);
        List<Item<String>> all = new ArrayList<>();
        for (int i = 0; i < claims; i++) {
            if (i > 0) {
                lapse(queue);
            }
            all.add(claimOne(queue));
        }
        if (lapseLatest) {
            lapse(queue);
        }
        Item<String> asking = all.get(Math.min(askingClaim, claims - 1));
        boolean holds = asking == all.get(claims - 1) && !lapseLatest;
        String leaseBefore = Queues.column(prefix, queue, "k", "lease_until");

        Set<String> done = snooze
                ? queue.snooze(Duration.ofHours(1), List.of(asking)).block(WAIT)
                : queue.extend(Duration.ofHours(1), List.of(asking)).block(WAIT);

        assertEquals(holds ? Set.of("k") : Set.of(), done);
        if (!holds) {
            assertEquals(leaseBefore, Queues.column(prefix, queue, "k", "lease_until"));
            assertEquals(String.valueOf(claims), Queues.column(prefix, queue, "k", "attempts"));
        }
    }
}
