package io.workqueue.internal;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * What the tests' SLF4J binding (slf4j-simple, which writes to whatever {@code System.err} is at
 * the time of each line) logs while a piece of code runs on the calling thread; the lines still
 * reach the real standard error too. For the loops whose only report of a failure is a log line.
 */
public final class CapturedLog {
    private CapturedLog() {}

    /** Runs {@code body} and returns what was logged meanwhile. */
    public static String during(Runnable body) {
        PrintStream original = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        OutputStream both = new OutputStream() {
            @Override
            public void write(int b) {
                original.write(b);
                captured.write(b);
            }

            @Override
            public void write(byte[] bytes, int offset, int length) {
                original.write(bytes, offset, length);
                captured.write(bytes, offset, length);
            }
        };
        System.setErr(new PrintStream(both, true, StandardCharsets.UTF_8));
        try {
            body.run();
        } finally {
            System.setErr(original);
        }
        return captured.toString(StandardCharsets.UTF_8);
    }
}
