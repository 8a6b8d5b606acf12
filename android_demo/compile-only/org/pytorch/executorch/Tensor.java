package org.pytorch.executorch;

/** Compile-only description of ExecuTorch's Android {@code Tensor} (see Module.java). */
public abstract class Tensor {
    Tensor() {
    }

    public static Tensor fromBlob(long[] data, long[] shape) {
        throw new UnsupportedOperationException("compile-only");
    }

    public static Tensor fromBlob(float[] data, long[] shape) {
        throw new UnsupportedOperationException("compile-only");
    }

    public long[] shape() {
        throw new UnsupportedOperationException("compile-only");
    }

    public float[] getDataAsFloatArray() {
        throw new UnsupportedOperationException("compile-only");
    }

    public long[] getDataAsLongArray() {
        throw new UnsupportedOperationException("compile-only");
    }
}
