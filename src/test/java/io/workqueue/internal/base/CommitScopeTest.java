package io.workqueue.internal.base;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.test.StepVerifier;

/**
 * {@link CommitScope}: what a caller's bracketed transaction announces, when, and how often. The
 * announcements against a real server and listener are {@code TransactionalNotifyIT}'s.
 */
class CommitScopeTest {
    private final List<String> announced = new ArrayList<>();
    private final Object first = new Object();
    private final Object second = new Object();

    /** A write inside the transaction: leaves {@code name}'s announcement with the scope it runs in. */
    private Mono<Void> write(Object announcer, String name) {
        return Mono.deferContextual(context -> {
            CommitScope scope = CommitScope.in(context);
            assertNotNull(scope, "the write runs inside the bracket's scope");
            scope.onCommit(announcer, () -> announced.add(name));
            return Mono.empty();
        });
    }

    @Test
    void aCompletedTransactionAnnouncesEachWriterOnceAndOnlyAtTheEnd() {
        Sinks.One<String> commit = Sinks.one();
        Mono<String> transaction = write(first, "first").then(write(first, "first again")).then(write(second, "second"))
                .then(commit.asMono());

        StepVerifier.create(CommitScope.around(transaction))
                .then(() -> assertEquals(List.of(), announced, "nothing before the commit"))
                .then(() -> commit.tryEmitValue("committed"))
                .expectNext("committed")
                .verifyComplete();
        // In no particular order: each writer once, however often it wrote.
        assertEquals(2, announced.size(), announced::toString);
        assertEquals(Set.of("first", "second"), Set.copyOf(announced));
    }

    @Test
    void anEmptyCompletionIsACommitToo() {
        CommitScope.around(write(first, "first")).block();
        assertEquals(List.of("first"), announced);
    }

    @Test
    void aFailedOrCancelledTransactionAnnouncesNothing() {
        StepVerifier.create(CommitScope.around(write(first, "first").then(Mono.error(new IllegalStateException("rolled back")))))
                .verifyErrorMessage("rolled back");
        StepVerifier.create(CommitScope.around(write(first, "first").then(Mono.never())))
                .thenCancel()
                .verify();
        assertEquals(List.of(), announced);
    }

    @Test
    void onlyTheOutermostBracketAnnounces() {
        Sinks.One<String> commit = Sinks.one();
        Mono<String> inner = CommitScope.around(write(first, "first")).then(Mono.just("inner done"));
        StepVerifier.create(CommitScope.around(inner.then(commit.asMono())))
                .then(() -> assertEquals(List.of(), announced, "the inner bracket completed; the transaction has not"))
                .then(() -> commit.tryEmitValue("committed"))
                .expectNext("committed")
                .verifyComplete();
        assertEquals(List.of("first"), announced);
    }

    @Test
    void aWriteThatOutlivesTheBracketIsAnnouncedAtOnceIfItCommittedAndNeverIfNot() {
        AtomicReference<CommitScope> committed = new AtomicReference<>();
        CommitScope.around(Mono.deferContextual(context -> {
            committed.set(CommitScope.in(context));
            return Mono.empty();
        })).block();
        committed.get().onCommit(first, () -> announced.add("late"));
        assertEquals(List.of("late"), announced);

        AtomicReference<CommitScope> failed = new AtomicReference<>();
        StepVerifier.create(CommitScope.around(Mono.deferContextual(context -> {
            failed.set(CommitScope.in(context));
            return Mono.error(new IllegalStateException("rolled back"));
        }))).verifyError(IllegalStateException.class);
        failed.get().onCommit(first, () -> announced.add("after a failure"));
        assertEquals(List.of("late"), announced);
    }

    @Test
    void aCancelAfterTheCompletionChangesNothing() {
        AtomicReference<CommitScope> scope = new AtomicReference<>();
        // take(1) cancels its source after the first value, which the bracket has seen complete.
        CommitScope.around(write(first, "first").then(Mono.deferContextual(context -> {
            scope.set(CommitScope.in(context));
            return Mono.just("committed");
        }))).flux().take(1).blockLast();
        scope.get().onCommit(second, () -> announced.add("late"));
        assertEquals(List.of("first", "late"), announced, "still committed after the cancel");
    }

    @Test
    void eachSubscriptionRunsInAScopeOfItsOwn() {
        List<CommitScope> scopes = new ArrayList<>();
        Mono<Void> bracketed = CommitScope.around(Mono.deferContextual(context -> {
            scopes.add(CommitScope.in(context));
            return Mono.empty();
        }));
        bracketed.block();
        bracketed.block();
        assertEquals(2, scopes.size());
        assertNotNull(scopes.get(0));
        assertNotSame(scopes.get(0), scopes.get(1), "a scope per subscription");
    }

    @Test
    void outsideABracketThereIsNoScopeAndANullTransactionFailsAtSubscription() {
        assertNull(Mono.deferContextual(context -> Mono.justOrEmpty(CommitScope.in(context))).block());
        Mono<Object> bracketed = CommitScope.around(null); // no error yet: the Mono is cold
        NullPointerException error = assertThrows(NullPointerException.class, bracketed::block);
        assertEquals("transaction", error.getMessage());
    }
}
