package io.workqueue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import javax.tools.Diagnostic;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The call shapes users write compile without a warning under {@code -Xlint:all -Werror}, as a
 * user's build would compile them. A call of a generic varargs method creates an array of a
 * non-reifiable type ({@code Entry<String>[]}), and an interface method cannot be
 * {@code @SafeVarargs}, so every {@code enqueue(entry)} used to warn "unchecked generic array
 * creation"; the fixed-arity forms take the common calls instead.
 */
class VarargsWarningTest {

    /** What producers and workers write: every line must compile cleanly. */
    private static final String CALL_SHAPES = """
            import io.workqueue.Entry;
            import io.workqueue.ReactiveWorkQueue;
            import java.time.Duration;
            import java.util.List;
            import java.util.UUID;
            import reactor.core.publisher.Mono;

            final class CallShapes {
                record TileKey(String layer, int x, int y) {}

                static void strings(ReactiveWorkQueue<String> queue) {
                    Entry<String> a = Entry.of("a");
                    Mono<Void> one = queue.enqueue(Entry.of("img-42").withPriority(5).withDelay(Duration.ofSeconds(10)));
                    Mono<Void> two = queue.enqueue(a, Entry.of("b"));
                    Mono<Void> three = queue.enqueue(a, Entry.of("b"), Entry.of("c").withPriority(1));
                    Mono<Void> many = queue.enqueue(List.of(a, Entry.of("b"), Entry.of("c"), Entry.of("d")));
                    Mono<Void> keys = queue.enqueueKeys("a", "b", "c", "d");
                    Mono<Long> completed = queue.complete("a", "b");
                    Mono<Long> released = queue.release(Duration.ofMinutes(1), new RuntimeException("x"), "a");
                    Mono<Long> removed = queue.remove("a", "b", "c");
                }

                static void records(ReactiveWorkQueue<TileKey> queue) {
                    Mono<Void> one = queue.enqueue(Entry.of(new TileKey("roads", 1, 2)).withPriority(3));
                    Mono<Void> two = queue.enqueue(Entry.of(new TileKey("roads", 1, 2)), Entry.of(new TileKey("roads", 1, 3)));
                    Mono<Void> keys = queue.enqueueKeys(new TileKey("roads", 1, 2), new TileKey("roads", 1, 3));
                    Mono<Long> completed = queue.complete(new TileKey("roads", 1, 2));
                }

                static void uuids(ReactiveWorkQueue<UUID> queue) {
                    Mono<Void> one = queue.enqueue(Entry.of(UUID.randomUUID()));
                    Mono<Long> completed = queue.complete(UUID.randomUUID(), UUID.randomUUID());
                }
            }
            """;

    /** The varargs form itself, reached by four entries: still there, still warning. */
    private static final String FOUR_ENTRIES = """
            import io.workqueue.Entry;
            import io.workqueue.ReactiveWorkQueue;

            final class FourEntries {
                static void four(ReactiveWorkQueue<String> queue) {
                    queue.enqueue(Entry.of("a"), Entry.of("b"), Entry.of("c"), Entry.of("d"));
                }
            }
            """;

    @Test
    void theCommonCallShapesCompileWithoutWarningsUnderWerror(@TempDir Path out) throws IOException {
        List<Diagnostic<? extends JavaFileObject>> diagnostics = compile("CallShapes", CALL_SHAPES, out);

        assertEquals(List.of(), describe(diagnostics));
    }

    /** The control: the harness does see the warning the fixed-arity forms avoid. */
    @Test
    void aCallWithFourEntriesStillReachesTheVarargsFormAndWarns(@TempDir Path out) throws IOException {
        List<Diagnostic<? extends JavaFileObject>> diagnostics = compile("FourEntries", FOUR_ENTRIES, out);

        List<String> described = describe(diagnostics);
        assertTrue(described.stream().anyMatch(d -> d.contains("unchecked generic array creation")), described::toString);
        assertFalse(Files.exists(out.resolve("FourEntries.class")), "-Werror turned the warning into a failure");
    }

    private static List<Diagnostic<? extends JavaFileObject>> compile(String className, String source, Path out)
            throws IOException {
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        assertNotNull(javac, "tests run on a JDK");
        DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
        List<String> options = new ArrayList<>(List.of("-Xlint:all", "-Werror", "-proc:none",
                "--release", "17", "-d", out.toString(), "-classpath", System.getProperty("java.class.path")));
        JavaFileObject file = new SimpleJavaFileObject(URI.create("string:///" + className + ".java"),
                JavaFileObject.Kind.SOURCE) {
            @Override
            public CharSequence getCharContent(boolean ignoreEncodingErrors) {
                return source;
            }
        };
        try (var files = javac.getStandardFileManager(diagnostics, null, null)) {
            javac.getTask(null, files, diagnostics, options, null, List.of(file)).call();
        }
        return diagnostics.getDiagnostics();
    }

    private static List<String> describe(List<Diagnostic<? extends JavaFileObject>> diagnostics) {
        return diagnostics.stream()
                .map(d -> d.getKind() + " line " + d.getLineNumber() + ": " + d.getMessage(null))
                .collect(Collectors.toList());
    }
}
