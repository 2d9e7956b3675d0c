package io.workqueue.postgres;

import io.r2dbc.spi.Connection;
import io.r2dbc.spi.Result;
import io.r2dbc.spi.Statement;
import java.util.List;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;

/**
 * One of the library's statements, rendered for a table (see {@link SqlTemplates}): the text the
 * driver receives (comments dropped) and its parameters by name, in the order the driver numbers
 * them. Statements are bound by parameter name through {@link #on(Connection)}, so a call site
 * reads as the SQL file does and no position is ever counted by hand. Immutable.
 */
final class SqlStatement {
    private final String name;
    private final String text;
    private final List<String> parameters;
    private final Set<String> fragments;

    SqlStatement(String name, String text, List<String> parameters, Set<String> fragments) {
        this.name = name;
        this.text = text;
        this.parameters = List.copyOf(parameters);
        this.fragments = Set.copyOf(fragments);
    }

    /** Its name in the SQL files. */
    String name() {
        return name;
    }

    /** The text as sent: comments and blank lines dropped, parameters as {@code $1}, {@code $2}, .... */
    String text() {
        return text;
    }

    /** Its parameters' names, in the order the driver numbers them. */
    List<String> parameters() {
        return parameters;
    }

    /** Whether the statement includes the named fragment, at any depth. */
    boolean uses(String fragment) {
        return fragments.contains(fragment);
    }

    /** The statement on {@code connection}, to bind by name; nothing is sent until it is executed. */
    Bound on(Connection connection) {
        return new Bound(connection.createStatement(text));
    }

    /** The text as sent, as {@link #text()}: a statement concatenated into SQL reads as its text. */
    @Override
    public String toString() {
        return text;
    }

    /**
     * A statement being bound by parameter name. Executing it with a parameter left unbound is a
     * programming error and fails at once, naming the statement and the parameter. Not thread-safe:
     * one caller builds and executes it.
     */
    final class Bound {
        private final Statement statement;
        private final boolean[] bound = new boolean[parameters.size()];

        private Bound(Statement statement) {
            this.statement = statement;
        }

        /** Binds {@code value} to parameter {@code parameter}. */
        Bound bind(String parameter, Object value) {
            int index = index(parameter);
            statement.bind(index, value);
            bound[index] = true;
            return this;
        }

        /** Binds SQL NULL of {@code type} to parameter {@code parameter}. */
        Bound bindNull(String parameter, Class<?> type) {
            int index = index(parameter);
            statement.bindNull(index, type);
            bound[index] = true;
            return this;
        }

        /** Binds {@code value}, or SQL NULL of {@code type} when it is null. */
        <T> Bound bindNullable(String parameter, @Nullable T value, Class<T> type) {
            return value == null ? bindNull(parameter, type) : bind(parameter, value);
        }

        /** Executes it: every parameter must be bound. */
        Publisher<? extends Result> execute() {
            for (int i = 0; i < bound.length; i++) {
                if (!bound[i]) {
                    throw new IllegalStateException("statement " + name + " executed without parameter " + parameters.get(i));
                }
            }
            return statement.execute();
        }

        private int index(String parameter) {
            int index = parameters.indexOf(parameter);
            if (index < 0) {
                throw new IllegalArgumentException("statement " + name + " has no parameter " + parameter + "; it takes "
                        + parameters);
            }
            return index;
        }
    }
}
