package org.pytorch.executorch;

/**
 * A JVM fake of ExecuTorch's Android {@code Module} (same signatures as android_demo/compile-only) that runs a
 * program given by the test, so the app's own {@code ExecuTorchRunner} runs on the JVM in `make android-compile`.
 */
public class Module implements java.io.Closeable {
    public static final int LOAD_MODE_FILE = 0;
    public static final int LOAD_MODE_MMAP = 1;

    /** What a test's fake program does. */
    public interface Program {
        String[] methods();

        EValue[] execute(String method, EValue[] inputs);
    }

    /** The program the next {@link #load} returns. */
    public static Program next;
    /** How many modules were destroyed. */
    public static int destroyed;

    private final Program program;

    private Module(Program program) {
        this.program = program;
    }

    public static Module load(String modelPath, int loadMode) {
        return new Module(next);
    }

    public EValue[] execute(String methodName, EValue... inputs) {
        return program.execute(methodName, inputs);
    }

    public EValue[] forward(EValue... inputs) {
        return execute("forward", inputs);
    }

    public String[] getMethods() {
        return program.methods();
    }

    public void destroy() {
        destroyed++;
    }

    @Override
    public void close() {
        destroy();
    }
}
