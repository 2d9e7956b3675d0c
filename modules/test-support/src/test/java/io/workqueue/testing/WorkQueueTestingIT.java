package io.workqueue.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.workqueue.Entry;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.Stats;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/** The testing helpers against the real server, as a user's test would use them. */
class WorkQueueTestingIT {
    private static final Duration WAIT = Duration.ofSeconds(30);

    record Email(String to, int template) {}

    @Test
    void pendingListsWhatWasEnqueuedDecodedAndTheAssertionsSayWhatIsMissing() {
        ReactiveWorkQueue<Email> queue = WorkQueueTesting.queue(Email.class, "emails");
        queue.enqueue(Entry.of(new Email("ada@example.com", 1)), Entry.of(new Email("bob@example.com", 2))
                .withDelay(Duration.ofHours(1))).block(WAIT);
        assertEquals(List.of(new Email("ada@example.com", 1), new Email("bob@example.com", 2)),
                WorkQueueTesting.pending(queue), "ready first, then delayed");
        WorkQueueTesting.assertPending(queue, new Email("ada@example.com", 1));
        AssertionError missing = assertThrows(AssertionError.class,
                () -> WorkQueueTesting.assertPending(queue, new Email("eve@example.com", 3)));
        assertTrue(missing.getMessage().contains("eve@example.com"), missing.getMessage());
        WorkQueueTesting.assertNotPending(queue, new Email("eve@example.com", 3));
        assertThrows(AssertionError.class, () -> WorkQueueTesting.assertNotPending(queue));
    }

    @Test
    void aUsersTestEnqueuesThroughTheCodeUnderTestAndRunsWhatIsDue() {
        // tag::usage[]
        ReactiveWorkQueue<Email> queue = WorkQueueTesting.queue(Email.class, "emails"); // a table of its own
        queue.enqueueKeys(new Email("ada@example.com", 1)).block();                   // the code under test
        WorkQueueTesting.assertPending(queue, new Email("ada@example.com", 1));

        List<String> sent = new CopyOnWriteArrayList<>();
        WorkQueueTesting.Drained<Email> run = WorkQueueTesting.drain(queue, item -> Mono.fromRunnable(
                () -> sent.add(item.key().to())));                                      // the handler under test
        assertEquals(List.of(new Email("ada@example.com", 1)), run.completed());
        assertEquals(List.of("ada@example.com"), sent);
        WorkQueueTesting.assertNotPending(queue);
        // end::usage[]
    }

    @Test
    void drainRunsEveryDueItemOnceCompletingSuccessesAndReleasingFailures() {
        ReactiveWorkQueue<String> queue = WorkQueueTesting.queue(String.class, "drain");
        queue.enqueueKeys("a", "b", "boom", "c").block(WAIT);
        queue.enqueue(Entry.of("later").withDelay(Duration.ofHours(1))).block(WAIT);
        List<String> ran = new CopyOnWriteArrayList<>();
        WorkQueueTesting.Drained<String> drained = WorkQueueTesting.drain(queue, item -> {
            ran.add(item.key());
            if (item.key().equals("boom")) {
                throw new IllegalStateException("boom failed");
            }
            if (item.key().equals("a")) {
                return queue.enqueueKeys("from-a"); // work that makes more work: run in the same drain
            }
            return Mono.empty();
        });
        assertEquals(List.of("a", "b", "c", "from-a"), drained.completed());
        assertEquals(List.of("boom"), drained.failed());
        assertEquals(5, ran.size(), "each due item once, the failed one included: " + ran);
        assertEquals(List.of("boom", "later"), WorkQueueTesting.pending(queue), "the failure due again, the delayed untouched");
        Stats stats = queue.stats().block(WAIT);
        assertEquals(1, stats.ready());
        assertEquals(0, stats.leased(), "nothing left leased");
    }
}
