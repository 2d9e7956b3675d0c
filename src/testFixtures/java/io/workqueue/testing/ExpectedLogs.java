package io.workqueue.testing;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.Appender;
import ch.qos.logback.core.filter.Filter;
import ch.qos.logback.core.spi.FilterReply;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.slf4j.LoggerFactory;

/**
 * For tests that provoke failures on purpose (a database cut off, a handler that throws, a
 * back-off function that returns nonsense): the WARN and ERROR events logged while such a test runs
 * are held back from the console and kept for the test to assert on, so a green run prints only
 * what nobody expected. Register it with {@code @ExtendWith(ExpectedLogs.class)} on the class; read
 * what was held back with {@link #events()} or {@link #assertLogged}. Events of other levels print
 * as usual, and nothing is held back outside such a test.
 *
 * <p>Works with Logback as the SLF4J backend (the library's tests and Spring Boot's); it attaches
 * its filter to the root logger's appenders when first used. Tests run one at a time per JVM here;
 * events from threads a test left running are held back while the next such test runs. Thread-safe.
 */
public final class ExpectedLogs implements BeforeEachCallback, AfterEachCallback {
    private static final String SKIPS = "io.workqueue.testing.Skips";
    private static final List<ILoggingEvent> HELD = new CopyOnWriteArrayList<>();
    private static volatile boolean expecting;
    private static volatile boolean installed;

    /** What the console's appenders consult: while a test expects failures, WARN and up are held. */
    private static final class Hold extends Filter<ILoggingEvent> {
        @Override
        public FilterReply decide(ILoggingEvent event) {
            // A skipped scenario says so at WARN (Skips): that is news, not an expected failure.
            if (expecting && event.getLevel().isGreaterOrEqual(Level.WARN) && !event.getLoggerName().equals(SKIPS)) {
                HELD.add(event);
                return FilterReply.DENY;
            }
            return FilterReply.NEUTRAL;
        }
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        begin();
    }

    @Override
    public void afterEach(ExtensionContext context) {
        end();
    }

    /**
     * Starts holding WARN and ERROR back, forgetting what was held before: for test engines that
     * run no JUnit Jupiter extensions (jqwik: call it from a {@code @BeforeProperty} method).
     */
    public static void begin() {
        install();
        HELD.clear();
        expecting = true;
    }

    /** Stops holding events back; what was held stays readable until the next {@link #begin()}. */
    public static void end() {
        expecting = false;
    }

    /** The WARN and ERROR events held back since this test began, oldest first. */
    public static List<ILoggingEvent> events() {
        return new ArrayList<>(HELD);
    }

    /**
     * Fails unless an event at {@code level} whose formatted message contains {@code text} was held
     * back since this test began.
     */
    public static void assertLogged(Level level, String text) {
        for (ILoggingEvent event : HELD) {
            if (event.getLevel().equals(level) && event.getFormattedMessage().contains(text)) {
                return;
            }
        }
        StringBuilder seen = new StringBuilder();
        HELD.forEach(event -> seen.append("\n  ").append(event.getLevel()).append(' ').append(event.getFormattedMessage()));
        throw new AssertionError("expected a " + level + " containing \"" + text + "\"; held back:" + seen);
    }

    /**
     * The events held back since this test began, each as {@code "LEVEL logger - message"} on a line
     * of its own (with the thrown exception's {@code toString()} after it, when there is one): for
     * assertions on what a loop whose only report of a failure is a log line said.
     */
    public static String text() {
        StringBuilder text = new StringBuilder();
        for (ILoggingEvent event : HELD) {
            text.append(event.getLevel()).append(' ').append(event.getLoggerName()).append(" - ")
                    .append(event.getFormattedMessage());
            if (event.getThrowableProxy() != null) {
                text.append(' ').append(event.getThrowableProxy().getClassName()).append(": ")
                        .append(event.getThrowableProxy().getMessage());
            }
            text.append('\n');
        }
        return text.toString();
    }

    private static synchronized void install() {
        if (installed || !(LoggerFactory.getILoggerFactory() instanceof ch.qos.logback.classic.LoggerContext)) {
            return;
        }
        Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        Hold hold = new Hold();
        hold.start();
        for (Iterator<Appender<ILoggingEvent>> appenders = root.iteratorForAppenders(); appenders.hasNext(); ) {
            appenders.next().addFilter(hold);
        }
        installed = true;
    }
}
