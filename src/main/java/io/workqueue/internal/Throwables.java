package io.workqueue.internal;

/** The one definition of which errors no user-facing loop should try to survive. */
public final class Throwables {
    private Throwables() {}

    /**
     * Errors after which the JVM itself cannot be trusted to carry on: out of memory, internal
     * errors, linkage failures, thread death. A {@link StackOverflowError} is not among them: the
     * stack it overflowed has unwound by the time it is caught, so it is one caller's bug, and so is
     * an {@link AssertionError} or any other {@link Error}.
     */
    public static boolean isJvmFatal(Throwable error) {
        return (error instanceof VirtualMachineError && !(error instanceof StackOverflowError))
                || error instanceof LinkageError
                || error instanceof ThreadDeath;
    }
}
