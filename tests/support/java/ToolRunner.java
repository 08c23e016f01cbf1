// Runs Kafka's tools (and the tests' own Java programs) one after another in one JVM,
// for tests/support/kafka_reference.JavaSession: a JVM's start costs seconds on a
// loaded machine, a tool's run a fraction of one once the classes are loaded.
//
// Each request is one line on stdin: the main class and its arguments, separated by
// tabs. The class's main(String[]) runs with System.out, System.err and Scala's Console
// (kafka-configs is Scala) captured; Kafka's Exit.exit and Exit.halt throw instead of
// ending the JVM (as Kafka's own tool tests do), so the status is the tool's. The answer
// on stdout is a line "@@RESULT <status> <stdout bytes> <stderr bytes>" and then those
// bytes. A tool that catches the exception of its Exit.exit and exits again (TopicCommand
// does) would have ended at the first call: the first status counts, and what the tool
// printed after it is dropped. Log4j keeps writing to the JVM's own stderr.

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.apache.kafka.common.utils.Exit;

public final class ToolRunner {
    static final class ExitCalled extends RuntimeException {
        final int status;

        ExitCalled(int status) {
            super("exit " + status, null, false, false);
            this.status = status;
        }
    }

    /** The current run's first exit: status, and how much it had printed by then. */
    private static Integer firstExit;
    private static int outAtExit;
    private static int errAtExit;
    private static ByteArrayOutputStream out;
    private static ByteArrayOutputStream err;

    private static void exit(int status) {
        if (firstExit == null) {
            System.out.flush();
            System.err.flush();
            firstExit = status;
            outAtExit = out.size();
            errAtExit = err.size();
        }
        throw new ExitCalled(status);
    }

    public static void main(String[] ignored) throws Exception {
        PrintStream realOut = System.out;
        PrintStream realErr = System.err;
        Exit.setExitProcedure((status, message) -> exit(status));
        Exit.setHaltProcedure((status, message) -> exit(status));
        Exit.setShutdownHookAdder((name, hook) -> { });
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] parts = line.split("\t", -1);
            String[] args = Arrays.copyOfRange(parts, 1, parts.length);
            out = new ByteArrayOutputStream();
            err = new ByteArrayOutputStream();
            firstExit = null;
            PrintStream capturedOut = new PrintStream(out, true, StandardCharsets.UTF_8);
            PrintStream capturedErr = new PrintStream(err, true, StandardCharsets.UTF_8);
            int[] status = {0};
            System.setOut(capturedOut);
            System.setErr(capturedErr);
            try {
                scala.Console.withOut(capturedOut, new scala.runtime.AbstractFunction0<Object>() {
                    @Override
                    public Object apply() {
                        return scala.Console.withErr(capturedErr, new scala.runtime.AbstractFunction0<Object>() {
                            @Override
                            public Object apply() {
                                status[0] = run(parts[0], args, capturedErr);
                                return null;
                            }
                        });
                    }
                });
            } finally {
                System.setOut(realOut);
                System.setErr(realErr);
            }
            capturedOut.flush();
            capturedErr.flush();
            byte[] o = out.toByteArray();
            byte[] e = err.toByteArray();
            if (firstExit != null) {
                status[0] = firstExit;
                o = Arrays.copyOf(o, outAtExit);
                e = Arrays.copyOf(e, errAtExit);
            }
            realOut.print("@@RESULT " + status[0] + " " + o.length + " " + e.length + "\n");
            realOut.write(o);
            realOut.write(e);
            realOut.flush();
        }
    }

    private static int run(String mainClass, String[] args, PrintStream err) {
        try {
            Class.forName(mainClass).getMethod("main", String[].class).invoke(null, (Object) args);
            return 0;
        } catch (InvocationTargetException wrapped) {
            Throwable cause = wrapped.getCause();
            if (cause instanceof ExitCalled) {
                return ((ExitCalled) cause).status;
            }
            cause.printStackTrace(err);
            return 1;
        } catch (ReflectiveOperationException | LinkageError missing) {
            missing.printStackTrace(err);
            return 127;
        }
    }
}
