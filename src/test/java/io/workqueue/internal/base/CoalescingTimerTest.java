package io.workqueue.internal.base;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import io.workqueue.testing.CountingScheduler;
import io.workqueue.testing.ExpectedLogs;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * {@link CoalescingTimer} over a virtual-time scheduler whose delayed schedules are counted: tasks
 * run at their deadline and only then, cancelled ones never, and a task due after the armed one, or
 * a cancel, asks the underlying scheduler for nothing.
 */
@ExtendWith(ExpectedLogs.class)
class CoalescingTimerTest {
    private final VirtualTimeScheduler time = VirtualTimeScheduler.create();
    private final AtomicInteger underlyingSchedules = new AtomicInteger();
    private final CoalescingTimer timer = new CoalescingTimer(new CountingScheduler(time, underlyingSchedules), () -> time.now(TimeUnit.NANOSECONDS));

    @Test
    void aTaskRunsAtItsDeadlineAndNotBefore() {
        List<String> ran = new ArrayList<>();
        timer.schedule(() -> ran.add("a"), 10, TimeUnit.SECONDS);
        time.advanceTimeBy(Duration.ofMillis(9_999));
        assertEquals(List.of(), ran);
        time.advanceTimeBy(Duration.ofMillis(1));
        assertEquals(List.of("a"), ran);
    }

    @Test
    void aCancelledTaskNeverRuns() {
        List<String> ran = new ArrayList<>();
        Disposable cancelled = timer.schedule(() -> ran.add("cancelled"), 1, TimeUnit.SECONDS);
        timer.schedule(() -> ran.add("kept"), 2, TimeUnit.SECONDS);
        cancelled.dispose();
        time.advanceTimeBy(Duration.ofSeconds(3));
        assertEquals(List.of("kept"), ran);
    }

    @Test
    void tasksRunInDeadlineOrderAndTiesInTheOrderScheduled() {
        List<String> ran = new ArrayList<>();
        timer.schedule(() -> ran.add("3s"), 3, TimeUnit.SECONDS);
        timer.schedule(() -> ran.add("1s first"), 1, TimeUnit.SECONDS);
        timer.schedule(() -> ran.add("1s second"), 1, TimeUnit.SECONDS);
        timer.schedule(() -> ran.add("2s"), 2, TimeUnit.SECONDS);
        time.advanceTimeBy(Duration.ofSeconds(3));
        assertEquals(List.of("1s first", "1s second", "2s", "3s"), ran);
    }

    @Test
    void anEarlierDeadlineArmsAnewAndTheLaterOneStillRuns() {
        List<String> ran = new ArrayList<>();
        timer.schedule(() -> ran.add("10s"), 10, TimeUnit.SECONDS);
        timer.schedule(() -> ran.add("1s"), 1, TimeUnit.SECONDS);
        time.advanceTimeBy(Duration.ofSeconds(1));
        assertEquals(List.of("1s"), ran);
        time.advanceTimeBy(Duration.ofSeconds(9));
        assertEquals(List.of("1s", "10s"), ran);
    }

    /**
     * What it is for: a thousand timeouts, each armed after the last and cancelled before it is
     * due, as a queue's rounds arm them, ask the underlying scheduler once; on the scheduler itself
     * they are a thousand delayed tasks, each of which wakes a parallel worker that waits for nothing.
     */
    @Test
    void laterDeadlinesAndCancelsAskTheUnderlyingSchedulerForNothing() {
        for (int i = 0; i < 1000; i++) {
            time.advanceTimeBy(Duration.ofMillis(5));
            timer.schedule(() -> { }, 10, TimeUnit.SECONDS).dispose();
        }
        assertEquals(1, underlyingSchedules.get());

        AtomicInteger direct = new AtomicInteger();
        Scheduler plain = new CountingScheduler(time, direct);
        for (int i = 0; i < 1000; i++) {
            plain.schedule(() -> { }, 10, TimeUnit.SECONDS).dispose();
        }
        assertEquals(1000, direct.get());
    }

    @Test
    void aTaskThatThrowsLeavesTheOthersToRun() {
        List<String> ran = new ArrayList<>();
        timer.schedule(() -> {
            throw new IllegalStateException("a broken timer task");
        }, 1, TimeUnit.SECONDS);
        timer.schedule(() -> ran.add("after"), 1, TimeUnit.SECONDS);
        time.advanceTimeBy(Duration.ofSeconds(1));
        assertEquals(List.of("after"), ran);
        ExpectedLogs.assertLogged(Level.ERROR, "a timer task failed");
    }

    @Test
    void aTaskScheduledFromARunningTaskRunsAtItsOwnDeadline() {
        List<String> ran = new ArrayList<>();
        timer.schedule(() -> {
            ran.add("first");
            timer.schedule(() -> ran.add("second"), 1, TimeUnit.SECONDS);
        }, 1, TimeUnit.SECONDS);
        time.advanceTimeBy(Duration.ofSeconds(1));
        assertEquals(List.of("first"), ran);
        time.advanceTimeBy(Duration.ofSeconds(1));
        assertEquals(List.of("first", "second"), ran);
    }

    @Test
    void reactorsDelaysAndTimeoutsRunThroughIt() {
        List<String> ran = new ArrayList<>();
        Mono.delay(Duration.ofSeconds(2), timer).subscribe(x -> ran.add("delay"));
        Mono.never().timeout(Duration.ofSeconds(1), Mono.just("timed out"), timer).subscribe(x -> ran.add("timeout"));
        time.advanceTimeBy(Duration.ofSeconds(2));
        assertEquals(List.of("timeout", "delay"), ran);
    }

    @Test
    void aDisposedSchedulerRefusesAsItsOwnScheduleWould() {
        VirtualTimeScheduler gone = VirtualTimeScheduler.create();
        CoalescingTimer over = new CoalescingTimer(gone, () -> gone.now(TimeUnit.NANOSECONDS));
        gone.dispose();
        assertThrows(RejectedExecutionException.class, () -> over.schedule(() -> { }, 1, TimeUnit.SECONDS));
    }

    /**
     * Random schedules, cancels and advances of the clock. The invariant: after each advance, every
     * task not cancelled whose deadline has passed has run exactly once, and none whose deadline has
     * not.
     */
    @Property(tries = 200)
    void everyTaskNotCancelledRunsOnceWhenItsDeadlineHasPassedAndNoneBefore(
            @ForAll("steps") List<Integer> steps) {
        VirtualTimeScheduler clock = VirtualTimeScheduler.create();
        CoalescingTimer subject = new CoalescingTimer(clock, () -> clock.now(TimeUnit.NANOSECONDS));
        Map<Integer, Long> deadlines = new HashMap<>();
        Map<Integer, Disposable> handles = new HashMap<>();
        Map<Integer, Integer> runs = new HashMap<>();
        int next = 0;
        for (int step : steps) {
            if (step >= 0) { // schedule, due in step ms
                int id = next++;
                deadlines.put(id, clock.now(TimeUnit.NANOSECONDS) + step * 1_000_000L);
                handles.put(id, subject.schedule(() -> runs.merge(id, 1, Integer::sum), step, TimeUnit.MILLISECONDS));
            } else if (step > -100) { // cancel one, if it has not run
                int id = Math.floorMod(step, Math.max(1, next));
                Disposable handle = handles.remove(id);
                if (handle != null && !runs.containsKey(id)) {
                    handle.dispose();
                    deadlines.remove(id);
                }
            } else { // advance
                clock.advanceTimeBy(Duration.ofMillis(-step - 99));
                long now = clock.now(TimeUnit.NANOSECONDS);
                for (Map.Entry<Integer, Long> task : deadlines.entrySet()) {
                    int times = runs.getOrDefault(task.getKey(), 0);
                    if (task.getValue() <= now) {
                        assertEquals(1, times, "task " + task.getKey() + " due at " + task.getValue() + ", now " + now);
                    } else {
                        assertEquals(0, times, "task " + task.getKey() + " ran before " + task.getValue() + ", now " + now);
                    }
                }
            }
        }
        assertTrue(runs.values().stream().allMatch(n -> n == 1));
    }

    @Provide
    Arbitrary<List<Integer>> steps() {
        // 0..2000: schedule due in that many ms; -99..-1: cancel; -100..-2100: advance by 1..2001 ms.
        return Arbitraries.oneOf(Arbitraries.integers().between(0, 2000), Arbitraries.integers().between(-99, -1),
                Arbitraries.integers().between(-2100, -100)).list().ofMaxSize(60);
    }
}
