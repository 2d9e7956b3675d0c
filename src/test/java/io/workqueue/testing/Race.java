package io.workqueue.testing;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;

/**
 * Starts {@code n} tasks on their own threads at the same moment (behind a barrier), so that calls
 * into the queue really overlap, and collects what each returned.
 */
public final class Race {
    private Race() {}

    /** Runs {@code task(i)} for {@code i} in {@code [0, n)} concurrently; rethrows the first failure. */
    public static <T> List<T> run(int n, IntFunction<T> task) {
        ExecutorService threads = Executors.newFixedThreadPool(n);
        CyclicBarrier start = new CyclicBarrier(n);
        try {
            List<Future<T>> futures = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                int index = i;
                futures.add(threads.submit(() -> {
                    start.await(30, TimeUnit.SECONDS);
                    return task.apply(index);
                }));
            }
            List<T> results = new ArrayList<>(n);
            for (Future<T> future : futures) {
                results.add(future.get(60, TimeUnit.SECONDS));
            }
            return results;
        } catch (Exception e) {
            throw new AssertionError("a racing task failed", e);
        } finally {
            threads.shutdownNow();
        }
    }
}
