package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkerOptions;
import io.workqueue.testing.Poll;
import io.workqueue.testing.Queues;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * A worker's own handler pool ends with its stream and leaves no thread behind that would keep a
 * plain program's JVM alive after its main method returned.
 */
class WorkerThreadsIT {
    private static final Duration WAIT = Duration.ofSeconds(20);
    private static String prefix;

    @BeforeAll
    static void createTable() {
        prefix = TestDatabase.createTable();
    }

    /** Live threads that are not daemons: each would hold the JVM open. */
    private static Set<Thread> nonDaemonThreads() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(thread -> thread.isAlive() && !thread.isDaemon())
                .collect(Collectors.toSet());
    }

    @Test
    void aFinishedWorkerLeavesNoThreadThatHoldsTheJvm() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "threads");
        queue.enqueueKeys("a", "b", "c").block(WAIT);
        Set<Thread> before = nonDaemonThreads();

        assertEquals(3, queue.process(item -> Mono.delay(Duration.ofMillis(10)),
                        WorkerOptions.builder().concurrency(3).poll(Duration.ofMillis(100)).build())
                .take(3).collectList().block(WAIT).size());

        // Well within the seconds a graceful disposal's helper thread lingered for.
        Poll.until(Duration.ofSeconds(2), "no new non-daemon thread is left", () -> {
            Set<Thread> now = nonDaemonThreads();
            now.removeAll(before);
            return now.isEmpty();
        }, () -> "left: " + nonDaemonThreads().stream().filter(t -> !before.contains(t)).map(Thread::getName).toList());
    }
}
