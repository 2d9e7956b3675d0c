package io.workqueue;

import io.workqueue.internal.base.Durations;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/** The loop behind {@link ReactiveWorkQueue#housekeeping(Duration)}. */
final class HousekeepingRounds {
    private static final Logger log = LoggerFactory.getLogger(HousekeepingRounds.class);
    /**
     * How long past a keeper's lease a follower tries again: the database decides who wins, so the
     * margin only keeps a follower from arriving a moment early and waiting a whole interval.
     */
    private static final Duration TAKEOVER_MARGIN = Duration.ofMillis(20);

    private HousekeepingRounds() {}

    static Flux<Housekeeping> every(ReactiveWorkQueue<?> queue, Duration interval) {
        return Flux.defer(() -> {
            Objects.requireNonNull(interval, "interval");
            if (interval.compareTo(Duration.ofMillis(1)) < 0) {
                return Flux.error(new IllegalArgumentException(
                        "interval must be at least 1 ms, but was " + interval));
            }
            Duration every = Durations.capped(interval);
            // Rounds start an interval apart, so a quarter interval of slack covers a live keeper's
            // jitter and a slow round, and a dead keeper is replaced a quarter interval after the
            // round it missed. A round longer than that lets another instance take a turn: harmless,
            // since every part of a round is safe from every instance at once.
            Duration lease = Durations.capped(every.plus(every.dividedBy(4)));
            return round(queue, every, lease)
                    .expand(done -> Mono.delay(nextIn(done, every)).then(round(queue, every, lease)))
                    .concatMap(done -> Mono.justOrEmpty(done.outcome()));
        });
    }

    /** A round's outcome, or none when it failed, and when it started. */
    private record Round(Optional<Housekeeping> outcome, long startedNanos) {}

    private static Mono<Round> round(ReactiveWorkQueue<?> queue, Duration interval, Duration lease) {
        return Mono.defer(() -> {
            long started = System.nanoTime();
            return queue.housekeep(lease)
                    .map(outcome -> new Round(Optional.of(outcome), started))
                    .onErrorResume(error -> {
                        log.warn("housekeeping of queue {} failed; trying again in {}: {}", queue.name(), interval,
                                error.toString(), error);
                        return Mono.just(new Round(Optional.empty(), started));
                    });
        });
    }

    /** An interval after the round started; sooner when another keeper's lease ends before that. */
    private static Duration nextIn(Round done, Duration interval) {
        Duration next = interval.minusNanos(System.nanoTime() - done.startedNanos());
        if (done.outcome().isPresent() && !done.outcome().get().kept()) {
            Duration takeover = done.outcome().get().keeperLeaseLeft().plus(TAKEOVER_MARGIN);
            if (takeover.compareTo(next) < 0) {
                next = takeover;
            }
        }
        return next.isNegative() ? Duration.ZERO : next;
    }
}
