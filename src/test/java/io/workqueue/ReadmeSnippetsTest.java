package io.workqueue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The README shows only code that exists, compiled and run, elsewhere in the repository: every code
 * block in a language that compiles (Java, XML, YAML) is preceded by a marker naming its source,
 * {@code <!-- snippet: path -->} for a whole file or {@code <!-- snippet: path#tag -->} for the
 * lines between {@code tag::tag[]} and {@code end::tag[]} in that file (indentation removed), and
 * the block must equal it. So a change to the code that the README does not follow, or the other
 * way round, fails the build. SQL blocks are run against a real server by {@code ReadmeSqlIT}. The
 * pages under {@code docs/} that the README sends readers to ({@code docs/*.md}) are held to the
 * same rules.
 */
class ReadmeSnippetsTest {
    /** Maven runs the library's tests from the repository root, where the README is. */
    static final Path README = Path.of("README.md");
    /** The folder of the README's longer pages; its Markdown files (not its subfolders') are checked. */
    static final Path DOCS = Path.of("docs");
    private static final Set<String> CHECKED_LANGUAGES = Set.of("java", "xml", "yaml", "yml");
    private static final String MARKER = "<!-- snippet: ";

    /** One fenced block of the README: its language, its text, the marker before it (or null), its line. */
    record Block(String language, String text, String marker, int line) {}

    static List<Block> blocks() throws IOException {
        return blocks(README);
    }

    /** The Markdown files directly in {@code docs/}, in name order. */
    static List<Path> docs() throws IOException {
        try (Stream<Path> files = Files.list(DOCS)) {
            return files.filter(f -> f.getFileName().toString().endsWith(".md") && Files.isRegularFile(f))
                    .sorted()
                    .toList();
        }
    }

    static List<Block> blocks(Path markdown) throws IOException {
        List<String> lines = Files.readAllLines(markdown);
        List<Block> blocks = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            if (!line.startsWith("```") || line.length() == 3) {
                continue;
            }
            String language = line.substring(3).trim();
            String marker = i > 0 && lines.get(i - 1).startsWith(MARKER) ? lines.get(i - 1) : null;
            StringBuilder text = new StringBuilder();
            int start = i + 1;
            for (i = start; i < lines.size() && !lines.get(i).equals("```"); i++) {
                text.append(lines.get(i)).append('\n');
            }
            blocks.add(new Block(language, text.toString(), marker, start));
        }
        return blocks;
    }

    @Test
    void everyBlockOfCodeNamesItsSourceAndEqualsIt() throws IOException {
        List<Block> checked = blocks().stream().filter(b -> CHECKED_LANGUAGES.contains(b.language())).toList();
        assertFalse(checked.isEmpty(), "the README has code blocks");
        List<String> problems = problems("README", checked);
        assertEquals(List.of(), problems, () -> String.join("\n\n", problems));
    }

    @Test
    void everyBlockOfCodeInTheDocsNamesItsSourceAndEqualsIt() throws IOException {
        List<Path> docs = docs();
        assertFalse(docs.isEmpty(), "docs/ has Markdown pages");
        List<String> problems = new ArrayList<>();
        for (Path doc : docs) {
            List<Block> checked = blocks(doc).stream().filter(b -> CHECKED_LANGUAGES.contains(b.language())).toList();
            problems.addAll(problems(doc.toString(), checked));
        }
        assertEquals(List.of(), problems, () -> String.join("\n\n", problems));
    }

    /** What is wrong with these blocks of one Markdown file, named {@code where} in the messages. */
    private static List<String> problems(String where, List<Block> checked) {
        List<String> problems = new ArrayList<>();
        for (Block block : checked) {
            if (block.marker() == null) {
                problems.add(where + " line " + block.line() + ": a " + block.language()
                        + " block without a '" + MARKER + "path[#tag] -->' line before it");
                continue;
            }
            String reference = block.marker().substring(MARKER.length(), block.marker().lastIndexOf(" -->")).trim();
            String expected;
            try {
                expected = source(reference);
            } catch (IOException | IllegalArgumentException e) {
                problems.add(where + " line " + block.line() + ": " + e.getMessage());
                continue;
            }
            if (!expected.equals(block.text())) {
                problems.add(where + " line " + block.line() + " differs from " + reference + "; it should read:\n"
                        + expected);
            }
        }
        return problems;
    }

    @Test
    void aTaggedRegionIsItsLinesWithoutTheirCommonIndentation() {
        String file = "class A {\n    void f() {\n        // tag::body[]\n        int x = 1;\n\n          x++;\n"
                + "        // end::body[]\n    }\n}\n";
        assertEquals("int x = 1;\n\n  x++;\n", region(file, "body", "A.java"));
    }

    /** The text a marker names: a whole file, or one tagged region of it. */
    static String source(String reference) throws IOException {
        int hash = reference.indexOf('#');
        Path path = Path.of(hash < 0 ? reference : reference.substring(0, hash));
        if (!Files.isRegularFile(path)) {
            throw new IllegalArgumentException("no file " + path);
        }
        String file = Files.readString(path);
        return hash < 0 ? file : region(file, reference.substring(hash + 1), path.toString());
    }

    static String region(String file, String tag, String name) {
        List<String> lines = file.lines().toList();
        int start = -1;
        int end = -1;
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).contains("tag::" + tag + "[]")) {
                start = i + 1;
            } else if (lines.get(i).contains("end::" + tag + "[]")) {
                end = i;
            }
        }
        if (start < 0 || end < start) {
            throw new IllegalArgumentException("no region tagged '" + tag + "' in " + name);
        }
        List<String> region = lines.subList(start, end);
        int indent = region.stream().filter(l -> !l.isBlank())
                .mapToInt(l -> l.length() - l.stripLeading().length()).min().orElse(0);
        StringBuilder text = new StringBuilder();
        for (String line : region) {
            text.append(line.isBlank() ? "" : line.substring(indent)).append('\n');
        }
        assertTrue(text.length() > 0, "region " + tag + " of " + name + " is empty");
        return text.toString();
    }
}
