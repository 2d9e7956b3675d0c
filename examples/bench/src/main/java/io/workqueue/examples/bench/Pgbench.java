package io.workqueue.examples.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * The pgbench baselines: the script files in {@code examples/bench/pgbench/} run by the pgbench
 * binary on the same server, and a check that those files still carry the library's statements.
 */
final class Pgbench {
    static final String CLAIM_THEN_COMPLETE = "claim_then_complete.sql";
    static final String COMPLETE_AND_CLAIM = "complete_and_claim.sql";
    /** The table the scripts name (pgbench cannot bind an identifier). */
    static final String PREFIX = "bench_drain";

    private final Path scripts;
    private final Db db;

    Pgbench(Path scripts, Db db) {
        this.scripts = scripts;
        this.db = db;
    }

    static String version() {
        try {
            Process process = new ProcessBuilder("pgbench", "--version").redirectErrorStream(true).start();
            String out = new String(process.getInputStream().readAllBytes()).trim();
            process.waitFor();
            return out;
        } catch (IOException | InterruptedException e) {
            return "pgbench not found";
        }
    }

    /**
     * Runs {@code script} with {@code clients} clients for at most {@code seconds}, stopping it early
     * once {@code done} says the work is over (polled every 200 ms). Returns pgbench's output.
     */
    String run(String script, int clients, int batch, int seconds, BooleanSupplier done) {
        List<String> command = new ArrayList<>(List.of("pgbench", "-n", "-M", "prepared",
                "-h", db.host, "-p", String.valueOf(db.port), "-U", db.user,
                "-c", String.valueOf(clients), "-j", String.valueOf(clients), "-T", String.valueOf(seconds),
                "-D", "queue=drain", "-D", "batch=" + batch, "-D", "keys={}",
                "-f", scripts.resolve(script).toString(), db.database));
        try {
            Path log = Files.createTempFile("pgbench", ".log");
            Process process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds + 30L);
            while (!process.waitFor(200, TimeUnit.MILLISECONDS)) {
                if (done.getAsBoolean() || System.nanoTime() > deadline) {
                    process.destroy(); // the drain is measured from the table, not from pgbench's report
                    process.waitFor(10, TimeUnit.SECONDS);
                    break;
                }
            }
            String output = Files.readString(log);
            Files.deleteIfExists(log);
            if (process.exitValue() != 0 && process.exitValue() != 143 && !output.contains("tps")) {
                throw new IllegalStateException("pgbench failed (" + process.exitValue() + "):\n" + output);
            }
            return output;
        } catch (IOException e) {
            throw new IllegalStateException("cannot run pgbench", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /**
     * Runs {@code scriptText} from one client at {@code perSecond} transactions a second (pgbench
     * {@code -R}) for {@code seconds}, and returns pgbench's average latency in milliseconds, NaN if
     * it reported none. Paced rather than flat out, this is what one statement costs when the client
     * and the server sit idle between statements, as they do in the wake-latency scenario.
     */
    double pacedLatencyMillis(String scriptText, int perSecond, int seconds) {
        try {
            Path script = Files.createTempFile("pgbench-paced", ".sql");
            Files.writeString(script, scriptText);
            Process process = new ProcessBuilder("pgbench", "-n", "-M", "prepared",
                    "-h", db.host, "-p", String.valueOf(db.port), "-U", db.user,
                    "-c", "1", "-R", String.valueOf(perSecond), "-T", String.valueOf(seconds),
                    "-f", script.toString(), db.database).redirectErrorStream(true).start();
            String output = new String(process.getInputStream().readAllBytes());
            process.waitFor();
            Files.deleteIfExists(script);
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("latency average = ([0-9.]+) ms").matcher(output);
            return m.find() ? Double.parseDouble(m.group(1)) : Double.NaN;
        } catch (IOException e) {
            return Double.NaN;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Double.NaN;
        }
    }

    /**
     * Checks that the script files still run the library's statements: each piece of the library's
     * text (with its parameters renamed to the scripts' variables) must appear in the script. Returns
     * the problems found; empty means they match.
     */
    List<String> checkScripts() {
        LibrarySql sql = LibrarySql.forPrefix(PREFIX);
        List<String> problems = new ArrayList<>();
        String claim = normalize(sql.claimDue);
        int finalSelect = claim.lastIndexOf("SELECT array_agg(l.item_key");
        String twoStatements = normalize(read(CLAIM_THEN_COMPLETE));
        expect(problems, CLAIM_THEN_COMPLETE, twoStatements, claim.substring(0, finalSelect), "claimDue (CTEs)");
        expect(problems, CLAIM_THEN_COMPLETE, twoStatements, claim.substring(finalSelect), "claimDue (final select)");
        expect(problems, CLAIM_THEN_COMPLETE, twoStatements, normalize(sql.completeKeys), "completeKeys");

        String cac = normalize(sql.completeAndClaim);
        int cacSelect = cac.lastIndexOf("SELECT array_agg(l.item_key");
        String oneStatement = normalize(read(COMPLETE_AND_CLAIM));
        expect(problems, COMPLETE_AND_CLAIM, oneStatement, cac.substring(0, cacSelect), "completeAndClaim (CTEs)");
        expect(problems, COMPLETE_AND_CLAIM, oneStatement, cac.substring(cacSelect), "completeAndClaim (final select)");
        return problems;
    }

    private static void expect(List<String> problems, String file, String script, String piece, String what) {
        if (!script.contains(piece.trim())) {
            problems.add(file + " no longer matches the library's " + what + "; expected to contain:\n    " + piece.trim());
        }
    }

    private String read(String script) {
        try {
            return Files.readString(scripts.resolve(script));
        } catch (IOException e) {
            throw new IllegalStateException("cannot read " + script, e);
        }
    }

    /** Drops comments and meta-commands, renames parameters to the scripts' variables, collapses whitespace. */
    static String normalize(String sql) {
        StringBuilder out = new StringBuilder();
        for (String line : sql.split("\n")) {
            int comment = line.indexOf("--");
            String code = comment >= 0 ? line.substring(0, comment) : line;
            if (code.strip().startsWith("\\")) {
                continue;
            }
            out.append(code).append(' ');
        }
        return out.toString()
                .replace("$1::text", ":queue::text")
                .replace("$2::text[]", ":keys::text[]")
                .replace("$5::text[]", ":keys::text[]")
                .replace("$2::int", ":max_attempts::int")
                .replace("$3::int", ":batch::int")
                .replace("$4::bigint", ":lease_us::bigint")
                .replaceAll("\\s+", " ")
                .replace("( ", "(")
                .replace(" )", ")")
                .replace(" ,", ",")
                .trim();
    }
}
