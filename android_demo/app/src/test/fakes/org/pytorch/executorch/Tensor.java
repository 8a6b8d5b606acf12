package org.pytorch.executorch;

/** A JVM fake of ExecuTorch's {@code Tensor}: long or float data wrapped without a copy, as the JNI does. */
public class Tensor {
    public final long[] longs;
    public final float[] floats;
    private final long[] shape;

    Tensor(long[] longs, float[] floats, long[] shape) {
        this.longs = longs;
        this.floats = floats;
        this.shape = shape;
    }

    public static Tensor fromBlob(long[] data, long[] shape) {
        return new Tensor(data, null, shape);
    }

    public static Tensor fromBlob(float[] data, long[] shape) {
        return new Tensor(null, data, shape);
    }

    public long[] shape() {
        return shape.clone();
    }

    public float[] getDataAsFloatArray() {
        return floats.clone();
    }
}
