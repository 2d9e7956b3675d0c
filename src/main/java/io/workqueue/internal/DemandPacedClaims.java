package io.workqueue.internal;

import java.time.Duration;
import java.util.List;
import java.util.function.IntFunction;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Flux;
import reactor.core.publisher.FluxSink;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/**
 * The loop behind {@code claimStream}: claim as much as downstream has asked for and not yet
 * received, emit it, and when a claim comes back short, wait for work before claiming again.
 *
 * <p>Runs on {@link ClaimLoop}: at most one claim or wait is in flight per subscription, so the
 * outstanding demand read before a claim cannot be overtaken by emissions; nothing is ever leased
 * ahead of demand, and a slow consumer holds no leases in a buffer. Transient failures (see
 * {@link SqlStates#isTransient}) of a claim or a wait back off exponentially between
 * {@code minBackoff} and {@code maxBackoff} with jitter, reset by the next successful claim, and so
 * does a claim with no answer within the claim timeout (a half-open connection); any other
 * failure terminates the stream, logged at ERROR. Cancellation disposes the claim in flight
 * (which the queue cancels on the server, or undoes if it shares its statement) or the wait.
 *
 * @param <T> the item type
 */
public final class DemandPacedClaims<T> {
    private static final Logger log = LoggerFactory.getLogger(DemandPacedClaims.class);

    private final String name;
    private final int maxBatch;
    private final IntFunction<Mono<List<T>>> claim;
    private final Supplier<Mono<Void>> awaitWork;
    private final Duration minBackoff;
    private final Duration maxBackoff;
    private final Duration roundTimeout;
    private final Scheduler timer;

    /**
     * @param name       names the queue in logs
     * @param maxBatch   the most one claim may ask for
     * @param claim      leases up to the given number of items
     * @param awaitWork  completes when it is worth claiming again after a short batch
     * @param minBackoff first delay after a transient failure
     * @param maxBackoff the delay never grows beyond this
     * @param claimTimeout a claim with no answer within this is abandoned and retried like a lost
     *                     connection: the lease the claims take
     * @param timer      the scheduler for back-off delays and the claim timeout
     */
    public DemandPacedClaims(String name, int maxBatch, IntFunction<Mono<List<T>>> claim,
            Supplier<Mono<Void>> awaitWork, Duration minBackoff, Duration maxBackoff, Duration claimTimeout,
            Scheduler timer) {
        this.name = name;
        this.maxBatch = maxBatch;
        this.claim = claim;
        this.awaitWork = awaitWork;
        this.minBackoff = minBackoff;
        this.maxBackoff = maxBackoff;
        this.roundTimeout = claimTimeout;
        this.timer = timer;
    }

    /** A cold, endless stream; each subscription runs its own loop. */
    public Flux<T> flux() {
        // ERROR, not BUFFER: the loop never emits beyond demand, and a bug that did should fail loudly.
        return Flux.create(sink -> new Loop(sink).start(), FluxSink.OverflowStrategy.ERROR);
    }

    /** One subscription's state, confined to its loop's serial execution. */
    private final class Loop extends ClaimLoop<List<T>> {
        private final FluxSink<T> items;
        private int wanted;

        Loop(FluxSink<T> sink) {
            super(DemandPacedClaims.this.name, sink, DemandPacedClaims.this.minBackoff,
                    DemandPacedClaims.this.maxBackoff, DemandPacedClaims.this.roundTimeout,
                    DemandPacedClaims.this.timer);
            this.items = sink;
        }

        @Override
        @Nullable Round<List<T>> nextRound(boolean waiting) {
            long demand = items.requestedFromDownstream();
            if (waiting || cancelled() || demand <= 0) {
                return null;
            }
            wanted = (int) Math.min(demand, maxBatch);
            return new Round<>(Mono.defer(() -> claim.apply(wanted)), true);
        }

        @Override
        boolean roundSucceeded(List<T> leased) {
            log.debug("claim on queue {} asked for {} and leased {}", name, wanted, leased.size());
            leased.forEach(items::next);
            return leased.size() < wanted;
        }

        @Override
        void roundFailed(Throwable error) {
            // A claim carries nothing to restore: a failed one leased nothing this loop knows of.
        }

        @Override
        Mono<?> awaitWork() {
            return Mono.defer(awaitWork);
        }
    }
}
