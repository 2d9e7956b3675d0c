package io.workqueue.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.r2dbc.spi.R2dbcBadGrammarException;
import io.r2dbc.spi.R2dbcNonTransientResourceException;
import io.r2dbc.spi.R2dbcTimeoutException;
import io.workqueue.KeyCodec;
import io.workqueue.WorkQueueException;
import io.workqueue.WriteTimeoutException;
import java.io.CharConversionException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ConnectException;
import java.nio.channels.ClosedChannelException;
import java.time.Duration;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.netty.channel.AbortedException;

/** Which failures a claim loop rides out: only the driver's and the network's, and write timeouts. */
class SqlStatesTest {

    record Tile(int x, int y) {}

    @Test
    void anIoFailureFromUserCodeIsNotTransient() {
        // What the JSON codec throws for a stored key that no longer matches its type.
        RuntimeException decoding = assertThrows(RuntimeException.class,
                () -> KeyCodec.defaultFor(Tile.class).decode("{\"x\":1,\"y\":2,\"zoom\":3}"));
        assertFalse(SqlStates.isTransient(decoding));
        assertFalse(SqlStates.isTransient(new UncheckedIOException("stored key is not JSON for Tile",
                new CharConversionException("Unrecognized field \"zoom\""))));
        assertFalse(SqlStates.isTransient(new WorkQueueException("wrapped", decoding)));
        assertFalse(SqlStates.isTransient(new IllegalStateException(new java.io.FileNotFoundException("x"))));
    }

    @Test
    void networkAndDriverIoFailuresAreTransient() {
        assertTrue(SqlStates.isTransient(new ClosedChannelException()));
        assertTrue(SqlStates.isTransient(new IllegalStateException(new ConnectException("refused"))));
        assertTrue(SqlStates.isTransient(new IOException("connection reset by peer")));
        assertTrue(SqlStates.isTransient(new R2dbcNonTransientResourceException("closed", "08006")));
    }

    @Test
    void aWriteWhoseCommitWasNotConfirmedInTimeIsTransient() {
        assertTrue(SqlStates.isTransient(new WriteTimeoutException("late", Duration.ofSeconds(1), null)));
        assertTrue(SqlStates.isTransient(new WorkQueueException("complete failed",
                new WriteTimeoutException("late", Duration.ofSeconds(1), null))));
    }

    @Test
    void noConnectionInTimeIsTransient() {
        // What r2dbc-pool raises when it cannot hand out a connection in time (a cut network: the
        // connect and the validation query go unanswered).
        assertTrue(SqlStates.isTransient(new R2dbcTimeoutException("Connection acquisition timed out after 5000ms",
                new TimeoutException())));
        assertTrue(SqlStates.isTransient(new TimeoutException("Did not observe any item or terminal signal")));
        assertTrue(SqlStates.isTransient(new RoundTimeoutException("q", Duration.ofSeconds(30))));
    }

    @Test
    void aWriteRefusedByAReadOnlyServerIsTransientAndItsConnectionMisdirected() {
        // SQLSTATE 25006: a standby (the old primary back after a failover) reached through an address
        // that still names it. The connection is closed; the next one may reach the primary.
        R2dbcNonTransientResourceException refused = new R2dbcNonTransientResourceException(
                "cannot execute UPDATE in a read-only transaction", "25006");
        assertTrue(SqlStates.isTransient(refused));
        assertTrue(SqlStates.isMisdirected(new WorkQueueException("wrapped", refused)));
        assertFalse(SqlStates.isMisdirected(new R2dbcNonTransientResourceException("closed", "08006")));
        assertFalse(SqlStates.isWriteRetryable(refused), "a writer does not retry it by itself");
    }

    @Test
    void aPooledConnectionThatFailedValidationIsTransient() {
        // What r2dbc-pool raises (io.r2dbc.pool.Validation) when an acquisition met dead connections
        // only, validating by depth (its default, and Spring Boot's): no SQLSTATE, and the next
        // acquisition opens a fresh connection.
        R2dbcNonTransientResourceException invalid = new R2dbcNonTransientResourceException("Connection validation failed");
        assertTrue(SqlStates.isTransient(invalid));
        assertTrue(SqlStates.isTransient(new WorkQueueException("claim failed", invalid)));
    }

    @Test
    void aWriteOnAConnectionClosedUnderItIsTransient() {
        // Reactor Netty's error for a send on a closed channel: a pool closing a dead connection says
        // goodbye (Terminate) to a server that is gone. No IOException, no SQLSTATE.
        AbortedException aborted = AbortedException.beforeSend();
        assertTrue(SqlStates.isTransient(aborted));
        assertTrue(SqlStates.isTransient(new AbortedException(new IOException("Connection reset by peer"))));
        // Giving such a connection back after a statement wraps it, as Reactor does for any failed
        // async cleanup: the statement succeeded, the round did not.
        Throwable released = assertThrows(RuntimeException.class, () -> Mono.usingWhen(Mono.just("connection"),
                        connection -> Mono.just(1), connection -> Mono.error(AbortedException.beforeSend()))
                .block(Duration.ofSeconds(10)));
        assertEquals(AbortedException.class, released.getCause().getClass(), released::toString);
        assertTrue(SqlStates.isTransient(released));
    }

    @Test
    void noFreeConnectionSlotOnTheServerIsTransient() {
        // SQLSTATE 53300 (too_many_connections), as the driver reports it: max_connections reached
        // ("sorry, too many clients already"), or a role's or database's connection limit.
        assertTrue(SqlStates.isTransient(new R2dbcNonTransientResourceException("sorry, too many clients already",
                SqlStates.TOO_MANY_CONNECTIONS)));
        assertTrue(SqlStates.isTransient(new R2dbcNonTransientResourceException(
                "remaining connection slots are reserved for non-replication superuser connections", "53300")));
    }

    @Test
    void whatTheServerRejectsStaysPermanentWhateverItsType() {
        // A syntax error and a missing table: the statement would fail the same way every time.
        assertFalse(SqlStates.isTransient(new R2dbcBadGrammarException("syntax error at or near \"FORM\"", "42601")));
        assertFalse(SqlStates.isTransient(new R2dbcBadGrammarException("relation \"q_items\" does not exist", "42P01")));
        // The driver maps SQLSTATEs it has no class for to the resource type: its SQLSTATE decides,
        // so an internal error or a fixed limit a statement exceeds is not ridden out.
        assertFalse(SqlStates.isTransient(new R2dbcNonTransientResourceException("cache lookup failed", "XX000")));
        assertFalse(SqlStates.isTransient(new R2dbcNonTransientResourceException("too many range table entries", "53400")));
    }

    @Test
    void userCodeThatLooksLikeAClosedConnectionIsNotTransient() {
        // Only Reactor Netty's own type counts, not a message that happens to read like it.
        assertFalse(SqlStates.isTransient(new IllegalStateException("Connection has been closed BEFORE send operation")));
        assertFalse(SqlStates.isTransient(new RuntimeException("Async resource cleanup failed after onComplete",
                new IllegalStateException("codec failed"))));
    }
}
