package org.pytorch.executorch;

/** Compile-only description of ExecuTorch's Android {@code EValue} (see Module.java). */
public final class EValue {
    private EValue() {
    }

    public static EValue from(Tensor tensor) {
        throw new UnsupportedOperationException("compile-only");
    }

    public Tensor toTensor() {
        throw new UnsupportedOperationException("compile-only");
    }

    public long toInt() {
        throw new UnsupportedOperationException("compile-only");
    }

    public String toStr() {
        throw new UnsupportedOperationException("compile-only");
    }
}
