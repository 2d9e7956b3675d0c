package io.workqueue.notify;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactory;
import io.r2dbc.spi.ConnectionFactoryMetadata;
import io.workqueue.InvalidConfigException;
import java.time.Duration;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Mono;

/**
 * What {@link PgNotificationListener.Builder#build()} refuses, synchronously, without connecting:
 * every bad setting, {@code null} included, is an {@link InvalidConfigException} naming it.
 */
class PgNotificationListenerBuilderTest {

    /** Reports PostgreSQL, which is all the builder reads; never connected. */
    private static final ConnectionFactory POSTGRES = new ConnectionFactory() {
        @Override
        public Publisher<? extends Connection> create() {
            return Mono.error(new AssertionError("building must not connect"));
        }

        @Override
        public ConnectionFactoryMetadata getMetadata() {
            return () -> "PostgreSQL";
        }
    };

    static Stream<Arguments> badSettings() {
        return Stream.of(
                Arguments.of("connectionFactory", "null",
                        (Supplier<PgNotificationListener.Builder>) () -> PgNotificationListener.builder(null).channel("ok")),
                Arguments.of("channel", "null",
                        (Supplier<PgNotificationListener.Builder>) () -> PgNotificationListener.builder(POSTGRES)),
                Arguments.of("channel", "Bad",
                        (Supplier<PgNotificationListener.Builder>) () -> PgNotificationListener.builder(POSTGRES).channel("Bad")),
                Arguments.of("timer", "null",
                        (Supplier<PgNotificationListener.Builder>) () -> PgNotificationListener.builder(POSTGRES).channel("ok")
                                .timer(null)),
                Arguments.of("reconnectBackoff min", "null",
                        (Supplier<PgNotificationListener.Builder>) () -> PgNotificationListener.builder(POSTGRES).channel("ok")
                                .reconnectBackoff(null, Duration.ofSeconds(1))),
                Arguments.of("reconnectBackoff max", "PT0.05S",
                        (Supplier<PgNotificationListener.Builder>) () -> PgNotificationListener.builder(POSTGRES).channel("ok")
                                .reconnectBackoff(Duration.ofMillis(100), Duration.ofMillis(50))),
                Arguments.of("healthCheck interval", "PT0S",
                        (Supplier<PgNotificationListener.Builder>) () -> PgNotificationListener.builder(POSTGRES).channel("ok")
                                .healthCheck(Duration.ZERO, Duration.ofSeconds(1))),
                Arguments.of("healthCheck timeout", "null",
                        (Supplier<PgNotificationListener.Builder>) () -> PgNotificationListener.builder(POSTGRES).channel("ok")
                                .healthCheck(Duration.ofSeconds(1), null)));
    }

    /**
     * The factory and the timer used to be refused by their setters with a
     * {@code NullPointerException}, unlike every other setting.
     */
    @ParameterizedTest(name = "{0} = {1}")
    @MethodSource("badSettings")
    void aBadSettingIsAnInvalidConfigExceptionFromBuildNamingTheFieldAndTheValue(String field, String value,
            Supplier<PgNotificationListener.Builder> given) {
        PgNotificationListener.Builder builder = assertDoesNotThrow(given::get, "a setter records; build() checks");

        InvalidConfigException e = assertThrows(InvalidConfigException.class, builder::build);

        assertTrue(e.getMessage().contains(field) && e.getMessage().contains(value), e.getMessage());
    }

    @Test
    void goodSettingsBuildWithoutConnecting() {
        PgNotificationListener listener = PgNotificationListener.builder(POSTGRES).channel("work_ready").build();

        assertEquals("work_ready", listener.channel());
    }
}
