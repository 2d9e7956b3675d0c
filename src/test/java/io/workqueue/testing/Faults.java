package io.workqueue.testing;

/**
 * Server-side fault injection: a row trigger on a test table that raises a chosen SQLSTATE for the
 * first few rows of one kind of write, and counts every row it sees. Lets a test produce a
 * serialization failure, a deadlock code or a plain error on demand, inside the library's own
 * statement. Use a table of the test's own: the trigger affects every queue in it.
 */
public final class Faults {
    private Faults() {}

    /**
     * Fails the first {@code failures} rows written by {@code operation} ({@code INSERT} or
     * {@code UPDATE}) on the table of {@code prefix} with {@code sqlState}; later rows pass.
     * {@code Integer.MAX_VALUE} fails every row.
     */
    public static void failRows(String prefix, String operation, int failures, String sqlState) {
        if (!operation.equals("INSERT") && !operation.equals("UPDATE")) {
            throw new IllegalArgumentException("operation must be INSERT or UPDATE but was " + operation);
        }
        if (!sqlState.matches("[0-9A-Z]{5}")) {
            throw new IllegalArgumentException("not a SQLSTATE: " + sqlState);
        }
        String table = Queues.table(prefix);
        String name = table + "_" + operation.toLowerCase(java.util.Locale.ROOT);
        TestDatabase.execute(
                "CREATE SEQUENCE " + name + "_rows",
                "CREATE FUNCTION " + name + "_fault() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                        + " IF nextval('" + name + "_rows') <= " + failures + " THEN"
                        + " RAISE EXCEPTION 'injected failure' USING ERRCODE = '" + sqlState + "'; END IF;"
                        + " RETURN NEW; END $$",
                "CREATE TRIGGER " + operation.toLowerCase(java.util.Locale.ROOT) + "_fault BEFORE " + operation
                        + " ON " + table + " FOR EACH ROW EXECUTE FUNCTION " + name + "_fault()");
    }

    /**
     * Kills the connection that writes the first {@code failures} rows of {@code operation} on the
     * table of {@code prefix}: the backend terminates itself mid-statement, so the client sees the
     * connection lost (SQLSTATE 57P01, then the socket closing). Later rows pass.
     */
    public static void dropConnectionOnRows(String prefix, String operation, int failures) {
        if (!operation.equals("INSERT") && !operation.equals("UPDATE")) {
            throw new IllegalArgumentException("operation must be INSERT or UPDATE but was " + operation);
        }
        String table = Queues.table(prefix);
        String name = table + "_" + operation.toLowerCase(java.util.Locale.ROOT);
        TestDatabase.execute(
                "CREATE SEQUENCE " + name + "_rows",
                "CREATE FUNCTION " + name + "_fault() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                        + " IF nextval('" + name + "_rows') <= " + failures + " THEN"
                        + " PERFORM pg_terminate_backend(pg_backend_pid()); PERFORM pg_sleep(5); END IF;"
                        + " RETURN NEW; END $$",
                "CREATE TRIGGER " + operation.toLowerCase(java.util.Locale.ROOT) + "_fault BEFORE " + operation
                        + " ON " + table + " FOR EACH ROW EXECUTE FUNCTION " + name + "_fault()");
    }

    /**
     * Fails every row written by {@code operation} whose key is {@code key}, on the table of
     * {@code prefix}, with {@code sqlState}; other rows pass.
     */
    public static void failKey(String prefix, String operation, String key, String sqlState) {
        if (!operation.equals("INSERT") && !operation.equals("UPDATE")) {
            throw new IllegalArgumentException("operation must be INSERT or UPDATE but was " + operation);
        }
        if (!sqlState.matches("[0-9A-Z]{5}") || !key.matches("[A-Za-z0-9_-]+")) {
            throw new IllegalArgumentException("not a SQLSTATE or a plain key: " + sqlState + ", " + key);
        }
        String table = Queues.table(prefix);
        String name = table + "_" + operation.toLowerCase(java.util.Locale.ROOT) + "_key";
        TestDatabase.execute(
                "CREATE FUNCTION " + name + "_fault() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                        + " IF NEW.item_key = '" + key + "' THEN"
                        + " RAISE EXCEPTION 'injected failure for key %', NEW.item_key USING ERRCODE = '" + sqlState + "'; END IF;"
                        + " RETURN NEW; END $$",
                "CREATE TRIGGER " + operation.toLowerCase(java.util.Locale.ROOT) + "_key_fault BEFORE " + operation
                        + " ON " + table + " FOR EACH ROW EXECUTE FUNCTION " + name + "_fault()");
    }

    /** How many rows the {@code operation} trigger has seen so far (sequences never roll back). */
    public static long rowsSeen(String prefix, String operation) {
        String name = Queues.table(prefix) + "_" + operation.toLowerCase(java.util.Locale.ROOT);
        return TestDatabase.queryLong("SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM " + name + "_rows");
    }
}
