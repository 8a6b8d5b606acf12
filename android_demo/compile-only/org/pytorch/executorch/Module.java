package org.pytorch.executorch;

/**
 * Compile-only description of ExecuTorch's Android {@code Module} (the members the app calls, with the
 * signatures of its documented Kotlin API as Java sees them). `make android-compile` compiles the app
 * against it; it is never packaged: the APK links the real executorch-android AAR.
 */
public class Module implements java.io.Closeable {
    public static final int LOAD_MODE_FILE = 0;
    public static final int LOAD_MODE_MMAP = 1;

    private Module() {
    }

    public static Module load(String modelPath, int loadMode) {
        throw new UnsupportedOperationException("compile-only");
    }

    public EValue[] execute(String methodName, EValue... inputs) {
        throw new UnsupportedOperationException("compile-only");
    }

    public EValue[] forward(EValue... inputs) {
        throw new UnsupportedOperationException("compile-only");
    }

    public String[] getMethods() {
        throw new UnsupportedOperationException("compile-only");
    }

    public void destroy() {
        throw new UnsupportedOperationException("compile-only");
    }

    @Override
    public void close() {
        throw new UnsupportedOperationException("compile-only");
    }
}
