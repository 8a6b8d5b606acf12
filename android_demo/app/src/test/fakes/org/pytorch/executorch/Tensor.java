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
        if (floats == null) { // as ExecuTorch's Tensor of another dtype refuses
            throw new IllegalStateException("Tensor of type Tensor_int64 cannot return data as float array.");
        }
        return floats.clone();
    }

    public long[] getDataAsLongArray() {
        if (longs == null) {
            throw new IllegalStateException("Tensor of type Tensor_float32 cannot return data as long array.");
        }
        return longs.clone();
    }
}
