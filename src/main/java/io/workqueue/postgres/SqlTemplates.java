package io.workqueue.postgres;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The library's SQL, as written in the {@code .sql} resources beside this class
 * ({@code io/workqueue/postgres/sql/}): named statements, the fragments they share, and their
 * named parameters, parsed once and rendered for a table. The files' first comment says the
 * format; in short, {@code -- statement: NAME} and {@code -- fragment: NAME} start blocks,
 * {@code {{NAME}}} includes a fragment (or a constant such as the table name), {@code :name}
 * names a parameter, and a statement lists its parameters in the order the driver numbers them.
 *
 * <p>Rendering replaces each parameter with its position ({@code $1}, {@code $2}, ...), so what the
 * driver receives is plain PostgreSQL, and checks what can be checked before a statement ever
 * runs: every placeholder resolves, every parameter a statement's code names is one it declares,
 * and every one it declares is used. A mistake in a file fails the first rendering, loudly, with
 * the file and block named.
 *
 * <p>Immutable and thread-safe once loaded.
 */
final class SqlTemplates {
    /** The files, in the order the reference prints their statements. */
    static final List<String> FILES = List.of("predicates.sql", "enqueue.sql", "claim.sql", "writers.sql",
            "maintenance.sql", "admin.sql");

    private static final Pattern HEADER = Pattern.compile("^-- (statement|fragment): ([A-Za-z_][A-Za-z0-9_.]*)\\s*$");
    private static final Pattern PARAM = Pattern.compile("^-- param ([a-z][a-z0-9_]*) ([^:]+?)(?:: (.*))?$");
    private static final Pattern PARAMS = Pattern.compile("^-- params:(.*)$");
    private static final Pattern USE = Pattern.compile("^-- use: ([a-z_][a-z0-9_]*) = ([a-z_][a-z0-9_]*)\\s*$");
    private static final Pattern PLACEHOLDER = Pattern.compile("\\{\\{([^}]*)}}");
    private static final Pattern INCLUDE = Pattern.compile(
            "^\\s*([a-z_][a-z0-9_]*)(?:\\s+with\\s+(.*?))?\\s*$");
    /** A parameter: a colon not part of a {@code ::} cast, then a name. */
    private static final Pattern PARAMETER = Pattern.compile("(?<![:\\w]):([a-z][a-z0-9_]*)");

    /** A declared parameter: its name, its SQL type, and what it is. */
    record Parameter(String name, String type, String description) {}

    /**
     * A block of a file: a fragment or a statement, with the statement's parameters and slot
     * fillings, and its lines as written.
     */
    private record Block(String file, boolean statement, String name, List<String> parameters, Map<String, String> uses,
            List<String> lines) {
        String where() {
            return file + ": " + (statement ? "statement " : "fragment ") + name;
        }
    }

    /** A rendered statement: as written (comments kept, parameters numbered) and its parameters in order. */
    record Rendered(String name, String readable, List<Parameter> parameters, Set<String> fragments) {}

    private static final SqlTemplates LOADED = new SqlTemplates(loadFiles());

    private final Map<String, Parameter> parameters = new LinkedHashMap<>();
    private final Map<String, Block> fragments = new HashMap<>();
    private final Map<String, Block> statements = new LinkedHashMap<>();

    private SqlTemplates(Map<String, String> files) {
        files.forEach(this::parse);
    }

    /** The templates of the library's own files. */
    static SqlTemplates library() {
        return LOADED;
    }

    /** Templates parsed from {@code files} (file name to text), for tests of the format. */
    static SqlTemplates of(Map<String, String> files) {
        return new SqlTemplates(files);
    }

    private static Map<String, String> loadFiles() {
        Map<String, String> files = new LinkedHashMap<>();
        for (String file : FILES) {
            try (InputStream in = SqlTemplates.class.getResourceAsStream("sql/" + file)) {
                if (in == null) {
                    throw new IllegalStateException("the library's SQL resource io/workqueue/postgres/sql/" + file
                            + " is missing from the jar");
                }
                files.put(file, new String(in.readAllBytes(), StandardCharsets.UTF_8));
            } catch (IOException e) {
                throw new UncheckedIOException("reading io/workqueue/postgres/sql/" + file, e);
            }
        }
        return files;
    }

    private void parse(String file, String text) {
        Block current = null;
        for (String line : text.split("\n", -1)) {
            Matcher header = HEADER.matcher(line);
            Matcher param = PARAM.matcher(line);
            if (header.matches()) {
                current = new Block(file, header.group(1).equals("statement"), header.group(2), new ArrayList<>(),
                        new LinkedHashMap<>(), new ArrayList<>());
                Map<String, Block> into = current.statement() ? statements : fragments;
                if (statements.containsKey(current.name()) || fragments.containsKey(current.name())) {
                    throw new IllegalStateException(current.where() + ": the name is taken");
                }
                into.put(current.name(), current);
            } else if (param.matches()) {
                String name = param.group(1);
                if (parameters.containsKey(name)) {
                    throw new IllegalStateException(file + ": parameter " + name + " is declared twice");
                }
                parameters.put(name, new Parameter(name, param.group(2).strip(), param.group(3)));
                current = null;
            } else if (current != null && current.statement() && current.lines().isEmpty() && PARAMS.matcher(line).matches()) {
                Matcher names = PARAMS.matcher(line);
                names.matches();
                for (String name : names.group(1).split(",")) {
                    if (!name.isBlank()) {
                        current.parameters().add(name.strip());
                    }
                }
            } else if (current != null && current.lines().isEmpty() && USE.matcher(line).matches()) {
                Matcher use = USE.matcher(line);
                use.matches();
                current.uses().put(use.group(1), use.group(2));
            } else if (current != null) {
                current.lines().add(line);
            }
        }
    }

    /** The names of every statement, in file order. */
    List<String> statementNames() {
        return List.copyOf(statements.keySet());
    }

    /**
     * Renders statement {@code name}: placeholders replaced (fragments, and {@code constants} such
     * as {@code table}), parameters numbered in the order it declares them.
     *
     * @throws IllegalStateException if the statement, a fragment or a constant is unknown, or its
     *                               parameters do not match what its code names
     */
    Rendered render(String name, Map<String, String> constants) {
        Block statement = statements.get(name);
        if (statement == null) {
            throw new IllegalStateException("no statement " + name + " in " + FILES);
        }
        Set<String> used = new LinkedHashSet<>();
        Deque<Map<String, String>> scopes = new ArrayDeque<>();
        scopes.push(statement.uses());
        String text = expand(statement, bodyOf(statement), constants, scopes, used, new ArrayDeque<>());
        List<Parameter> declared = new ArrayList<>();
        Map<String, Integer> positions = new HashMap<>();
        for (String parameter : statement.parameters()) {
            Parameter known = parameters.get(parameter);
            if (known == null) {
                throw new IllegalStateException(statement.where() + ": parameter " + parameter + " is not declared");
            }
            if (positions.putIfAbsent(parameter, positions.size() + 1) != null) {
                throw new IllegalStateException(statement.where() + ": parameter " + parameter + " listed twice");
            }
            declared.add(known);
        }
        Set<String> named = new LinkedHashSet<>();
        StringBuilder numbered = new StringBuilder();
        for (String line : text.split("\n", -1)) {
            int comment = line.indexOf("--");
            String code = comment < 0 ? line : line.substring(0, comment);
            String rest = comment < 0 ? "" : line.substring(comment);
            numbered.append(number(code, positions, named, statement, true))
                    .append(number(rest, positions, named, statement, false))
                    .append('\n');
        }
        for (String parameter : statement.parameters()) {
            if (!named.contains(parameter)) {
                throw new IllegalStateException(statement.where() + ": parameter " + parameter + " is listed but never used");
            }
        }
        StringBuilder readable = new StringBuilder("-- ").append(name).append('\n');
        if (declared.isEmpty()) {
            readable.append("--   (no parameters)\n");
        }
        for (Parameter parameter : declared) {
            readable.append("--   $").append(positions.get(parameter.name())).append(' ').append(parameter.name())
                    .append(' ').append(parameter.type());
            if (parameter.description() != null) {
                readable.append(": ").append(substitute(parameter.description(), constants));
            }
            readable.append('\n');
        }
        readable.append(numbered.toString().strip()).append('\n');
        return new Rendered(name, readable.toString(), declared, used);
    }

    /**
     * Fragment {@code name} on its own, its parameters numbered as {@code positions} says: for
     * checks that a statement contains a shared predicate, and for benchmarks that rebuild a read
     * from the library's own predicates.
     */
    String fragment(String name, Map<String, String> constants, Map<String, Integer> positions) {
        Block fragment = fragments.get(name);
        if (fragment == null) {
            throw new IllegalStateException("no fragment " + name + " in " + FILES);
        }
        Deque<Map<String, String>> scopes = new ArrayDeque<>();
        String text = expand(fragment, bodyOf(fragment), constants, scopes, new LinkedHashSet<>(), new ArrayDeque<>());
        Matcher m = PARAMETER.matcher(text);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            Integer position = positions.get(m.group(1));
            if (position == null) {
                throw new IllegalStateException("fragment " + name + " names :" + m.group(1) + ", which has no position");
            }
            m.appendReplacement(out, Matcher.quoteReplacement("$" + position));
        }
        m.appendTail(out);
        return out.toString();
    }

    private String number(String part, Map<String, Integer> positions, Set<String> named, Block statement, boolean code) {
        Matcher m = PARAMETER.matcher(part);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            Integer position = positions.get(m.group(1));
            if (position == null) {
                if (code) {
                    throw new IllegalStateException(statement.where() + ": names :" + m.group(1)
                            + " but does not list it in its params");
                }
                m.appendReplacement(out, Matcher.quoteReplacement(m.group()));
                continue;
            }
            if (code) {
                named.add(m.group(1));
            }
            m.appendReplacement(out, Matcher.quoteReplacement("$" + position));
        }
        m.appendTail(out);
        return out.toString();
    }

    /**
     * The text of a block: a statement's lines, or a fragment's without its first paragraph (the
     * comment lines before its first blank line, which say what it is for), blank lines at either
     * end dropped.
     */
    private static List<String> bodyOf(Block block) {
        List<String> lines = block.lines();
        int from = 0;
        if (!block.statement()) {
            int i = 0;
            while (i < lines.size() && lines.get(i).startsWith("--")) {
                i++;
            }
            if (i > 0 && i < lines.size() && lines.get(i).isBlank()) {
                from = i + 1;
            }
        }
        int to = lines.size();
        while (from < to && lines.get(from).isBlank()) {
            from++;
        }
        while (to > from && lines.get(to - 1).isBlank()) {
            to--;
        }
        return lines.subList(from, to);
    }

    /** Replaces every placeholder in {@code lines}, recursively. */
    private String expand(Block block, List<String> lines, Map<String, String> constants,
            Deque<Map<String, String>> scopes, Set<String> used, Deque<String> including) {
        StringBuilder out = new StringBuilder();
        for (int l = 0; l < lines.size(); l++) {
            String line = lines.get(l);
            StringBuilder rendered = new StringBuilder();
            Matcher m = PLACEHOLDER.matcher(line);
            int at = 0;
            while (m.find()) {
                rendered.append(line, at, m.start());
                at = m.end();
                String insert = resolve(block, m.group(1), constants, scopes, used, including);
                // A placeholder alone on its line includes a block, indented as the placeholder is;
                // one inside a line includes text as it is (a predicate reads the same everywhere).
                String prefix = rendered.toString();
                boolean alone = prefix.isBlank() && line.substring(m.end()).isBlank();
                rendered.append(alone ? insert.replace("\n", "\n" + prefix) : insert);
            }
            rendered.append(line.substring(at));
            out.append(rendered);
            if (l < lines.size() - 1) {
                out.append('\n');
            }
        }
        return out.toString();
    }

    private String resolve(Block block, String placeholder, Map<String, String> constants,
            Deque<Map<String, String>> scopes, Set<String> used, Deque<String> including) {
        Matcher include = INCLUDE.matcher(placeholder);
        if (!include.matches()) {
            throw new IllegalStateException(block.where() + ": cannot read {{" + placeholder + "}}");
        }
        String name = include.group(1);
        Map<String, String> with = new HashMap<>();
        if (include.group(2) != null) {
            for (String binding : include.group(2).split(",")) {
                String[] pair = binding.split("=", 2);
                if (pair.length != 2 || pair[0].isBlank() || pair[1].isBlank()) {
                    throw new IllegalStateException(block.where() + ": cannot read {{" + placeholder + "}}");
                }
                with.put(pair[0].strip(), pair[1].strip());
            }
        }
        String target = name;
        for (Map<String, String> scope : scopes) {
            if (scope.containsKey(name)) {
                target = scope.get(name);
                break;
            }
        }
        Block fragment = fragments.get(target);
        if (fragment == null) {
            String constant = constants.get(target);
            if (constant == null || !with.isEmpty()) {
                throw new IllegalStateException(block.where() + ": {{" + placeholder + "}} names no fragment or constant"
                        + (target.equals(name) ? "" : " (" + name + " is filled with " + target + ")"));
            }
            return constant;
        }
        if (including.contains(target)) {
            throw new IllegalStateException(block.where() + ": fragment " + target + " includes itself");
        }
        used.add(target);
        including.push(target);
        scopes.push(with);
        try {
            return expand(fragment, bodyOf(fragment), constants, scopes, used, including);
        } finally {
            scopes.pop();
            including.pop();
        }
    }

    /** Placeholders of constants only, for parameter descriptions. */
    private static String substitute(String text, Map<String, String> constants) {
        Matcher m = PLACEHOLDER.matcher(text);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            String value = constants.get(m.group(1).strip());
            m.appendReplacement(out, Matcher.quoteReplacement(Objects.requireNonNullElse(value, m.group())));
        }
        m.appendTail(out);
        return out.toString();
    }
}
