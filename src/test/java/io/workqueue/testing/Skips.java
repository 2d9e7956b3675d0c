package io.workqueue.testing;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Assumptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Skips a test whose environment is missing (a cluster of its own, a pooler, root), and says so on
 * the console, once per reason: an aborted test otherwise shows only as "skipped" in the summary,
 * its reason buried in the report files. CI sets the scenarios' {@code *_REQUIRED} switches, which
 * turn these skips into failures.
 */
public final class Skips {
    private static final Logger log = LoggerFactory.getLogger(Skips.class);
    private static final Set<String> SAID = ConcurrentHashMap.newKeySet();

    private Skips() {}

    /** Logs {@code why} at WARN the first time it is given in this JVM, then aborts the test with it. */
    public static void abort(String why) {
        if (SAID.add(why)) {
            log.warn("SKIPPED, not failed: {}", why);
        }
        Assumptions.abort(why);
    }
}
