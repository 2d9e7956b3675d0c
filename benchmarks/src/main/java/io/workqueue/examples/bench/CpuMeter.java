package io.workqueue.examples.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * Where the CPU time of a run went, read from Linux's {@code /proc}: the database server (every
 * {@code postgres} process, plus what the postmasters' exited children used, since backends that
 * end during a run are accounted to the postmaster when it reaps them), the client (this JVM and
 * the children it has waited for, such as pgbench), and the whole machine.
 *
 * <p>This is the profile that says whether a drain is bound by the server or by the client: on a
 * 2-core box, items/s can never exceed 2 / (server + client CPU seconds per item).
 */
final class CpuMeter {
    /** USER_HZ: the unit of the tick counts in {@code /proc}; 100 on every mainstream Linux build. */
    private static final double TICKS_PER_SECOND = 100.0;

    private CpuMeter() {}

    /** Cumulative counters at one instant; {@link #since} turns two into a {@link Use}. */
    record Snapshot(long serverTicks, long clientTicks, long busyTicks, long allTicks, long nanos, boolean available) {
        Use since(Snapshot before) {
            if (!available || !before.available) {
                return Use.UNAVAILABLE;
            }
            return new Use((serverTicks - before.serverTicks) / TICKS_PER_SECOND,
                    (clientTicks - before.clientTicks) / TICKS_PER_SECOND,
                    (nanos - before.nanos) / 1e9,
                    allTicks == before.allTicks ? 0 : (double) (busyTicks - before.busyTicks) / (allTicks - before.allTicks));
        }
    }

    /**
     * CPU seconds the server and the client used over {@code wallSeconds}, and the fraction of the
     * machine's CPU time that was busy (all processes, all cores).
     */
    record Use(double serverSeconds, double clientSeconds, double wallSeconds, double machineBusy) {
        static final Use UNAVAILABLE = new Use(Double.NaN, Double.NaN, Double.NaN, Double.NaN);

        /** Microseconds of CPU per item: {server, client}. */
        double[] microsPerItem(long items) {
            return items <= 0 ? new double[] {Double.NaN, Double.NaN}
                    : new double[] {serverSeconds * 1e6 / items, clientSeconds * 1e6 / items};
        }
    }

    static Snapshot take() {
        try {
            long server = 0;
            Map<Long, Stat> postgres = new HashMap<>();
            try (Stream<Path> processes = Files.list(Path.of("/proc"))) {
                for (Path dir : (Iterable<Path>) processes::iterator) {
                    String name = dir.getFileName().toString();
                    if (!name.chars().allMatch(Character::isDigit)) {
                        continue;
                    }
                    Stat stat = Stat.read(dir.resolve("stat"));
                    if (stat != null && stat.command.equals("postgres")) {
                        postgres.put(Long.parseLong(name), stat);
                    }
                }
            }
            for (Stat stat : postgres.values()) {
                server += stat.ownTicks;
                if (!postgres.containsKey(stat.parent)) {
                    server += stat.childTicks; // a postmaster: its exited backends
                }
            }
            Stat self = Stat.read(Path.of("/proc/self/stat"));
            List<String> cpu = List.of(Files.readAllLines(Path.of("/proc/stat")).get(0).trim().split("\\s+"));
            long all = 0;
            for (int i = 1; i < cpu.size(); i++) {
                all += Long.parseLong(cpu.get(i));
            }
            // user nice system idle iowait irq softirq steal ...: idle and iowait are not busy.
            long busy = all - Long.parseLong(cpu.get(4)) - Long.parseLong(cpu.get(5));
            return new Snapshot(server, self == null ? 0 : self.ownTicks + self.childTicks, busy, all, System.nanoTime(),
                    self != null);
        } catch (IOException | RuntimeException e) {
            return new Snapshot(0, 0, 0, 0, System.nanoTime(), false);
        }
    }

    /**
     * CPU seconds one process has used so far (its own user and system time), or NaN if it is gone
     * or {@code /proc} cannot be read: for the sessions of one benchmark on a server others share.
     */
    static double processSeconds(long pid) {
        Stat stat = Stat.read(Path.of("/proc", Long.toString(pid), "stat"));
        return stat == null ? Double.NaN : stat.ownTicks / TICKS_PER_SECOND;
    }

    /** The fields of {@code /proc/<pid>/stat} this needs. */
    private record Stat(String command, long parent, long ownTicks, long childTicks) {
        static Stat read(Path file) {
            String line;
            try {
                line = Files.readString(file);
            } catch (IOException e) {
                return null; // the process ended between listing and reading
            }
            int open = line.indexOf('(');
            int close = line.lastIndexOf(')');
            // After the command: state ppid pgrp session tty tpgid flags minflt cminflt majflt
            // cmajflt utime stime cutime cstime ...
            String[] f = line.substring(close + 2).split(" ");
            return new Stat(line.substring(open + 1, close), Long.parseLong(f[1]),
                    Long.parseLong(f[11]) + Long.parseLong(f[12]), Long.parseLong(f[13]) + Long.parseLong(f[14]));
        }
    }
}
