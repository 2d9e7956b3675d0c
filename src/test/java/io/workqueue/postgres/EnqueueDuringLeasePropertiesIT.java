package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.r2dbc.spi.Connection;
import io.workqueue.Entry;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.testing.Queues;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.BeforeContainer;
import reactor.core.publisher.Mono;

/**
 * Random interleavings of enqueue (group-committed and transactional), claim, complete (also sent
 * twice, as a worker retrying an answer it lost does), release, lease lapse and remove on one key,
 * against the server. The invariant: every enqueue is followed
 * by a claim that starts after it, unless the key is removed. Completes and releases come from the
 * worker holding a live lease (a worker whose lease lapsed is gone; a straggler's late complete is
 * the at-least-once caveat the README states, outside this invariant).
 */
class EnqueueDuringLeasePropertiesIT {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final Duration LEASE = Duration.ofMinutes(5);
    private static final String KEY = "k";
    private static String prefix;

    enum Op { ENQUEUE, ENQUEUE_IN_TRANSACTION, CLAIM, COMPLETE, COMPLETE_RETRIED, COMPLETE_AND_CLAIM, RELEASE, LAPSE, REMOVE }

    @BeforeContainer
    static void createTable() {
        prefix = TestDatabase.createTable();
    }

    @Provide
    Arbitrary<List<Op>> histories() {
        return Arbitraries.of(Op.class).list().ofMinSize(1).ofMaxSize(25);
    }

    @Property(tries = 150)
    void everyEnqueueIsFollowedByAClaimThatStartsAfterIt(@ForAll("histories") List<Op> history) {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "interleave");
        ConcurrentLinkedQueue<CursorLook.Ended> looks = new ConcurrentLinkedQueue<>();
        ((PostgresWorkQueue<String>) queue).look().observeForTests(looks::add);
        boolean held = false; // a live lease, held by "the worker"
        boolean owed = false; // an enqueue since the start of the last claim that handed the key out
        List<String> trace = new ArrayList<>();
        for (Op op : history) {
            trace.add(op.name());
            switch (op) {
                case ENQUEUE -> {
                    queue.enqueueKeys(KEY).block(WAIT);
                    owed = true;
                }
                case ENQUEUE_IN_TRANSACTION -> {
                    Mono.usingWhen(TestDatabase.plain().create(),
                                    c -> Mono.from(c.beginTransaction())
                                            .then(queue.enqueue(c, List.of(Entry.of(KEY))))
                                            .then(Mono.from(c.commitTransaction())),
                                    Connection::close)
                            .block(WAIT);
                    owed = true;
                }
                case CLAIM -> {
                    if (!held && claimed(queue.claim(1, LEASE).block(WAIT))) {
                        held = true;
                        owed = false;
                    }
                }
                case COMPLETE -> {
                    if (held) {
                        queue.complete(KEY).block(WAIT);
                        held = false;
                    }
                }
                case COMPLETE_RETRIED -> {
                    // The first attempt committed but its answer was lost: the worker sends it again.
                    if (held) {
                        queue.complete(KEY).block(WAIT);
                        queue.complete(KEY).block(WAIT);
                        held = false;
                    }
                }
                case COMPLETE_AND_CLAIM -> {
                    if (held) {
                        held = claimed(queue.completeAndClaim(List.of(KEY), 1, LEASE).block(WAIT));
                        assertFalse(held, "one statement cannot complete and claim the same key: " + trace);
                    }
                }
                case RELEASE -> {
                    if (held) {
                        queue.release(Duration.ZERO, null, KEY).block(WAIT);
                        held = false;
                    }
                }
                case LAPSE -> {
                    if (held) {
                        // The database clock passes the lease's end (moved, not waited for).
                        Queues.update(prefix, queue, KEY, "lease_until = now() - INTERVAL '1 millisecond'");
                        held = false;
                    }
                }
                case REMOVE -> {
                    queue.remove(KEY).block(WAIT);
                    held = false;
                    owed = false;
                }
            }
        }
        // Drain as a healthy worker would, through the same long-lived instance, whose cursors the
        // history moved: an empty answer counts only after a look that began after the last change.
        for (int rounds = 0; rounds < 10; rounds++) {
            if (held) {
                queue.complete(KEY).block(WAIT);
                held = false;
            }
            if (!claimed(claimOrConfirmNothingDue(queue, looks))) {
                break;
            }
            held = true;
            owed = false;
        }
        assertFalse(held, "the key kept coming back: " + trace);
        assertFalse(owed, "an enqueue was never followed by a claim: " + trace);
    }

    /**
     * A claim of one item; empty only once a claim planned after a look found nothing, the look
     * having started after this call: what lies behind the instance's cursors is then found too.
     */
    private static List<Item<String>> claimOrConfirmNothingDue(ReactiveWorkQueue<String> queue,
            ConcurrentLinkedQueue<CursorLook.Ended> looks) {
        long since = System.nanoTime();
        long deadline = since + WAIT.toNanos();
        while (true) {
            long claimStarted = System.nanoTime();
            List<Item<String>> items = queue.claim(1, LEASE).block(WAIT);
            if (!items.isEmpty() || looks.stream().anyMatch(look -> look.succeeded()
                    && look.startNanos() - since > 0 && claimStarted - look.endNanos() > 0)) {
                return items;
            }
            assertTrue(System.nanoTime() - deadline < 0, "no look ended within " + WAIT);
            Mono.delay(Duration.ofMillis(20)).block(WAIT);
        }
    }

    private static boolean claimed(List<Item<String>> items) {
        assertTrue(items.size() <= 1);
        return !items.isEmpty();
    }
}
