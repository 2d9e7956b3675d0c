package io.workqueue.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.r2dbc.spi.R2dbcNonTransientResourceException;
import io.workqueue.Item;
import io.workqueue.WorkerOptions;
import io.workqueue.WriteTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.IntFunction;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterProperty;
import net.jqwik.api.lifecycle.BeforeProperty;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.test.scheduler.VirtualTimeScheduler;
import io.workqueue.testing.ExpectedLogs;

/**
 * Randomized runs of the {@link Worker} against a {@link ScriptedQueue} on virtual time: hostile
 * handlers and back-off functions, injected round failures, stingy downstream demand, cancellation
 * at a random moment. After every step and at the end, the invariants the worker promises must
 * hold.
 *
 * <p>Invariants: never more than {@code concurrency} handlers running, leases held, or completed
 * items buffered; every leased item ends exactly one way (completed, released, or lapsed after its
 * handler outlived the lease), and the way its handler asked for; nothing is delivered twice or
 * before it completed; the stream ends only when cancelled and never hangs: unless cancelled, the
 * queue is drained.
 */
class WorkerPropertiesTest {
    /** Every try provokes failures on purpose: their WARNs are expected, held back from the console. */
    @BeforeProperty
    void holdExpectedWarnings() {
        ExpectedLogs.begin();
    }

    @AfterProperty
    void stopHolding() {
        ExpectedLogs.end();
    }
    private static final Duration LEASE = Duration.ofSeconds(30);
    private static final Duration STEP = Duration.ofMillis(250);
    /** From here on downstream demand never holds the drain back. */
    private static final Duration DEMAND_FREE_AT = Duration.ofMinutes(2).plusSeconds(30);
    /**
     * The most one item can hold a handler slot once demand is free: a handler that hangs until
     * its lease ends, or the longest scripted delay, plus the longest sane back-off and a claim's
     * poll.
     */
    private static final Duration SLOT_TIME = LEASE.plusSeconds(10);

    /** What one item's handler does. */
    enum Behaviour { SUCCEED_AT_ONCE, SUCCEED_LATER, SIGNAL_ERROR, THROW_RUNTIME, THROW_ERROR, THROW_STACK_OVERFLOW,
        RETURN_NULL, HANG;

        boolean succeeds() {
            return this == SUCCEED_AT_ONCE || this == SUCCEED_LATER;
        }
    }

    /** What the back-off function does. */
    enum BackoffKind { SANE, THROWS, RETURNS_NULL, OVERFLOWS }

    /** One injected round outcome; OK means the round runs as scripted. */
    enum RoundOutcome { OK, LOST_CONNECTION, WRITE_TIMEOUT }

    record Scenario(List<Behaviour> behaviours, List<Integer> delaysMillis, int concurrency, int claimBatch,
            BackoffKind backoff, List<RoundOutcome> rounds, long initialDemand, int topUp,
            @Nullable Integer cancelAtMillis) {}

    @Provide
    Arbitrary<Scenario> scenarios() {
        Arbitrary<List<Behaviour>> behaviours = Arbitraries.of(Behaviour.class).list().ofMinSize(1).ofMaxSize(30);
        Arbitrary<List<Integer>> delays = Arbitraries.integers().between(0, 5_000).list().ofSize(30);
        Arbitrary<List<RoundOutcome>> rounds = Arbitraries.of(RoundOutcome.class).list().ofMaxSize(6);
        Arbitrary<Long> demand = Arbitraries.oneOf(Arbitraries.just(Long.MAX_VALUE), Arbitraries.longs().between(0, 8));
        Arbitrary<@Nullable Integer> cancelAt = Arbitraries.integers().between(0, 40_000).injectNull(0.5);
        return Combinators.combine(behaviours, delays, Arbitraries.integers().between(1, 5),
                        Arbitraries.integers().between(1, 5), Arbitraries.of(BackoffKind.class), rounds, demand,
                        Arbitraries.integers().between(0, 3))
                .flatAs((b, d, c, batch, backoff, r, initial, topUp) -> cancelAt.map(cancel ->
                        new Scenario(b, d, c, batch, backoff, r, initial, topUp, cancel)));
    }

    @Property(tries = 300)
    void theWorkerKeepsItsPromisesWhateverItsHandlersDo(@ForAll("scenarios") Scenario scenario) {
        VirtualTimeScheduler vts = VirtualTimeScheduler.create();
        try {
            run(scenario, vts);
        } finally {
            vts.dispose();
        }
    }

    private static void run(Scenario scenario, VirtualTimeScheduler vts) {
        List<String> keys = new ArrayList<>();
        Map<String, Behaviour> behaviourOf = new HashMap<>();
        Map<String, Integer> delayOf = new HashMap<>();
        for (int i = 0; i < scenario.behaviours().size(); i++) {
            String key = "k" + i;
            keys.add(key);
            behaviourOf.put(key, scenario.behaviours().get(i));
            delayOf.put(key, scenario.delaysMillis().get(i));
        }
        ScriptedQueue queue = new ScriptedQueue(vts, keys);
        for (RoundOutcome outcome : scenario.rounds()) {
            queue.roundFailures.add(switch (outcome) {
                case OK -> null;
                case LOST_CONNECTION -> new R2dbcNonTransientResourceException("connection closed", "08006");
                case WRITE_TIMEOUT -> new WriteTimeoutException("did not commit in time", Duration.ofSeconds(1), null);
            });
        }

        int[] runningNow = {0};
        int[] maxRunning = {0};
        Set<String> expired = new HashSet<>();
        IntFunction<Duration> backoff = switch (scenario.backoff()) {
            case SANE -> attempts -> Duration.ofSeconds(attempts);
            case THROWS -> attempts -> {
                throw new IllegalStateException("back-off bug");
            };
            case RETURNS_NULL -> attempts -> null;
            case OVERFLOWS -> attempts -> Duration.ofMinutes(1).multipliedBy(1L << 62);
        };
        // Handlers in the loop (immediate), so that virtual time alone decides every step.
        WorkerOptions options = WorkerOptions.builder().concurrency(scenario.concurrency())
                .claimBatch(scenario.claimBatch()).lease(LEASE).poll(Duration.ofSeconds(1)).backoff(backoff)
                .handlerScheduler(Schedulers.immediate()).build();

        java.util.function.Function<Item<String>, Publisher<?>> handler = item -> {
            String key = item.key();
            runningNow[0]++;
            maxRunning[0] = Math.max(maxRunning[0], runningNow[0]);
            Behaviour behaviour = behaviourOf.get(key);
            switch (behaviour) {
                case THROW_RUNTIME -> {
                    runningNow[0]--;
                    throw new IllegalArgumentException("handler bug for " + key);
                }
                case THROW_ERROR -> {
                    runningNow[0]--;
                    throw new AssertionError("handler assertion for " + key);
                }
                case THROW_STACK_OVERFLOW -> {
                    runningNow[0]--;
                    throw new StackOverflowError();
                }
                case RETURN_NULL -> {
                    runningNow[0]--;
                    return null;
                }
                default -> {
                }
            }
            Mono<?> work = switch (behaviour) {
                case SUCCEED_AT_ONCE -> Mono.empty();
                case SUCCEED_LATER -> Mono.delay(Duration.ofMillis(delayOf.get(key)), vts);
                case SIGNAL_ERROR -> Mono.delay(Duration.ofMillis(delayOf.get(key)), vts)
                        .then(Mono.error(new IllegalStateException("failed " + key)));
                case HANG -> Mono.never().doOnCancel(() -> expired.add(key));
                default -> throw new AssertionError(behaviour);
            };
            // Counted down before the signal travels on (doFinally would run after the worker had
            // already reacted to it, and so count one handler twice).
            return work.doOnTerminate(() -> runningNow[0]--).doOnCancel(() -> runningNow[0]--);
        };

        WorkerTest.Downstream downstream = new WorkerTest.Downstream(scenario.initialDemand());
        new Worker<>(queue, handler, options, vts).flux().subscribe(downstream);
        boolean cancelled = false;
        // Long enough to drain any scenario once demand is free: every item, one slot at a time per
        // unit of concurrency, at its worst. (A fixed 5 minutes was too short for five hanging
        // handlers behind one slot: the last one's lease had not ended when the run stopped.)
        int serialRounds = (keys.size() + scenario.concurrency() - 1) / scenario.concurrency() + 1;
        Duration horizon = DEMAND_FREE_AT.plus(SLOT_TIME.multipliedBy(serialRounds));
        for (Duration t = Duration.ZERO; t.compareTo(horizon) < 0; t = t.plus(STEP)) {
            if (!cancelled && scenario.cancelAtMillis() != null && t.toMillis() >= scenario.cancelAtMillis()) {
                downstream.dispose();
                cancelled = true;
            }
            if (!cancelled && scenario.topUp() > 0 && t.toMillis() % 1_000 == 0) {
                downstream.request(scenario.topUp());
            }
            if (!cancelled && t.compareTo(DEMAND_FREE_AT) >= 0) {
                downstream.request(Long.MAX_VALUE); // from half-time on, demand never holds the drain back
            }
            vts.advanceTimeBy(STEP);
            checkBounds(scenario, queue, downstream, expired, cancelled, maxRunning[0]);
        }

        assertNull(downstream.error.get(), () -> "the stream ended with " + downstream.error.get());
        assertFalse(downstream.completed.get(), "an endless stream completed");
        assertEquals(0, runningNow[0] - countHung(queue, behaviourOf, expired),
                "every handler that could finish has finished");

        // Every leased item ended one way, the way its handler asked for.
        Map<String, Long> releasedCount = new HashMap<>();
        queue.released.forEach(r -> releasedCount.merge(r.key(), 1L, Long::sum));
        for (String key : queue.claimed) {
            Behaviour behaviour = behaviourOf.get(key);
            boolean completed = queue.completed.contains(key);
            long released = releasedCount.getOrDefault(key, 0L);
            boolean lapsed = expired.contains(key);
            assertEquals(1, (completed ? 1 : 0) + released + (lapsed ? 1 : 0),
                    () -> key + " (" + behaviour + ") completed=" + completed + " released=" + released + " lapsed=" + lapsed);
            if (released == 1 && queue.released.stream().anyMatch(r -> r.key().equals(key) && r.delay().isZero()
                    && r.cause() == null)) {
                continue; // leased by a round that ran into cancellation, handed back untouched
            }
            if (behaviour.succeeds()) {
                assertTrue(completed, () -> key + " succeeded but was not completed");
            } else if (behaviour == Behaviour.HANG) {
                assertTrue(lapsed, () -> key + " hung but was not cancelled at its lease's end");
            } else {
                assertEquals(1, released, () -> key + " failed (" + behaviour + ") but was not released");
            }
        }
        assertEquals(new HashSet<>(queue.completed).size(), queue.completed.size(), "completed twice");
        assertEquals(new HashSet<>(downstream.received).size(), downstream.received.size(), "delivered twice");
        assertTrue(queue.completed.containsAll(downstream.received), "delivered before completion");
        if (!cancelled) {
            assertEquals(0, queue.remaining(), "the stream stopped draining without being cancelled");
            assertEquals(new HashSet<>(queue.completed), new HashSet<>(downstream.received),
                    "with demand, every completed item is delivered");
        }
    }

    private static long countHung(ScriptedQueue queue, Map<String, Behaviour> behaviourOf, Set<String> expired) {
        return queue.claimed.stream().filter(k -> behaviourOf.get(k) == Behaviour.HANG && !expired.contains(k)).count();
    }

    private static void checkBounds(Scenario scenario, ScriptedQueue queue, WorkerTest.Downstream downstream,
            Set<String> expired, boolean cancelled, int maxRunning) {
        int concurrency = scenario.concurrency();
        assertTrue(maxRunning <= concurrency, () -> maxRunning + " handlers ran at once");
        long settled = new HashSet<>(queue.completed).size() + queue.released.size() + expired.size();
        assertTrue(queue.claimed.size() - settled <= concurrency,
                () -> "holding " + (queue.claimed.size() - settled) + " leases");
        if (!cancelled) {
            long buffered = queue.completed.size() - downstream.received.size();
            assertTrue(buffered <= concurrency, () -> buffered + " completed items buffered");
        }
    }
}
