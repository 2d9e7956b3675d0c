package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The SQL files' format, as {@link SqlTemplates} reads and renders it, and the checks it makes
 * before any statement runs: a mistake in a file fails rendering, naming the file and block.
 */
class SqlTemplatesTest {
    private static final Map<String, String> TABLE = Map.of("table", "t_work_queue_items");

    private static SqlTemplates of(String text) {
        return SqlTemplates.of(Map.of("test.sql", text));
    }

    @Test
    void parametersAreNumberedInTheOrderTheStatementListsThem() {
        SqlTemplates t = of("""
                -- param queue text: the queue
                -- param keys text[]: the keys

                -- statement: s
                -- params: keys, queue
                SELECT * FROM {{table}} WHERE queue_name = :queue::text AND item_key = ANY(:keys::text[])
                """);
        SqlTemplates.Rendered s = t.render("s", TABLE);
        assertEquals("""
                -- s
                --   $1 keys text[]: the keys
                --   $2 queue text: the queue
                SELECT * FROM t_work_queue_items WHERE queue_name = $2::text AND item_key = ANY($1::text[])
                """, s.readable());
        assertEquals(List.of("keys", "queue"), s.parameters().stream().map(SqlTemplates.Parameter::name).toList());
    }

    @Test
    void aFragmentsFirstParagraphDescribesItAndIsNotRendered() {
        SqlTemplates t = of("""
                -- param queue text: the queue

                -- fragment: mine
                -- What it is for.

                -- Why it is written so.
                queue_name = :queue::text

                -- statement: s
                -- params: queue
                SELECT 1 FROM {{table}} WHERE {{mine}}
                """);
        assertEquals("""
                -- s
                --   $1 queue text: the queue
                SELECT 1 FROM t_work_queue_items WHERE -- Why it is written so.
                queue_name = $1::text
                """, t.render("s", TABLE).readable());
    }

    @Test
    void aBlockPlaceholderIsIndentedAndAnInlineOneIsNot() {
        SqlTemplates t = of("""
                -- fragment: two
                -- Two lines.

                a
                    AND b

                -- statement: s
                -- params:
                SELECT (
                    {{two}}
                ), x WHERE {{two}}
                """);
        assertEquals("""
                -- s
                --   (no parameters)
                SELECT (
                    a
                        AND b
                ), x WHERE a
                    AND b
                """, t.render("s", TABLE).readable());
    }

    @Test
    void variantsFillSlotsByNameForAStatementOrForOneInclusion() {
        SqlTemplates t = of("""
                -- fragment: shape
                -- A shape with a slot.

                SELECT {{part}} FROM {{table}}

                -- fragment: one
                -- One.

                1

                -- fragment: two
                -- Two.

                2

                -- statement: first
                -- params:
                -- use: part = one
                {{shape}}

                -- statement: both
                -- params:
                {{shape with part = one}} UNION ALL {{shape with part = two}}
                """);
        assertTrue(t.render("first", TABLE).readable().contains("SELECT 1 FROM t_work_queue_items"));
        assertTrue(t.render("both", TABLE).readable()
                .contains("SELECT 1 FROM t_work_queue_items UNION ALL SELECT 2 FROM t_work_queue_items"));
        assertEquals(java.util.Set.of("shape", "one", "two"), t.render("both", TABLE).fragments());
    }

    @Test
    void aParameterTheCodeNamesButTheStatementDoesNotListFailsRendering() {
        SqlTemplates t = of("""
                -- param queue text: the queue
                -- param limit int: the limit

                -- statement: s
                -- params: queue
                SELECT 1 WHERE :queue::text = 'q' LIMIT :limit::int
                """);
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> t.render("s", TABLE));
        assertTrue(e.getMessage().contains("test.sql: statement s") && e.getMessage().contains(":limit"), e.getMessage());
    }

    @Test
    void aListedParameterTheCodeNeverNamesFailsRendering() {
        SqlTemplates t = of("""
                -- param queue text: the queue

                -- statement: s
                -- params: queue
                SELECT 1 -- :queue only in a comment does not count
                """);
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> t.render("s", TABLE));
        assertTrue(e.getMessage().contains("queue is listed but never used"), e.getMessage());
    }

    @Test
    void anUnknownPlaceholderAndAFragmentIncludingItselfFailRendering() {
        SqlTemplates t = of("""
                -- fragment: loop
                -- Includes itself.

                x {{loop}}

                -- statement: unknown
                -- params:
                SELECT {{nothing}}

                -- statement: looping
                -- params:
                SELECT {{loop}}
                """);
        assertTrue(assertThrows(IllegalStateException.class, () -> t.render("unknown", TABLE)).getMessage()
                .contains("{{nothing}} names no fragment or constant"));
        assertTrue(assertThrows(IllegalStateException.class, () -> t.render("looping", TABLE)).getMessage()
                .contains("includes itself"));
    }

    @Test
    void aNameTakenTwiceFailsLoading() {
        assertThrows(IllegalStateException.class, () -> of("""
                -- fragment: a
                x

                -- statement: a
                -- params:
                SELECT 1
                """));
    }

    /**
     * The shared predicates name the queue and the attempt limit; every statement that includes
     * one numbers those two as $1 and $2, so {@link Sql#DUE} and its siblings are the very text in
     * each of them.
     */
    @Test
    void everyStatementUsingAPredicateNumbersItsParametersAsThePredicatesConstantsDo() {
        SqlTemplates library = SqlTemplates.library();
        for (String name : library.statementNames()) {
            SqlTemplates.Rendered rendered = library.render(name, Sql.constants(""));
            boolean usesPredicate = rendered.fragments().stream()
                    .anyMatch(f -> List.of("due", "delayed", "leased", "stalled", "completed").contains(f));
            List<String> parameters = rendered.parameters().stream().map(SqlTemplates.Parameter::name).toList();
            if (usesPredicate && parameters.contains("attempt_limit")) {
                assertEquals(List.of("queue", "attempt_limit"), parameters.subList(0, 2), name);
            }
        }
    }

    @Test
    void everyLibraryStatementRenders() {
        SqlTemplates library = SqlTemplates.library();
        assertTrue(library.statementNames().size() > 30, library.statementNames().toString());
        for (String name : library.statementNames()) {
            assertTrue(library.render(name, Sql.constants("p")).readable().startsWith("-- " + name + "\n"), name);
        }
    }
}
