package org.pytorch.executorch;

/** A JVM fake of ExecuTorch's {@code EValue}: a tensor or an int (see Module.java). */
public final class EValue {
    private final Tensor tensor;
    private final long value;

    private EValue(Tensor tensor, long value) {
        this.tensor = tensor;
        this.value = value;
    }

    public static EValue from(Tensor tensor) {
        return new EValue(tensor, 0);
    }

    public static EValue from(long value) {
        return new EValue(null, value);
    }

    public Tensor toTensor() {
        return tensor;
    }

    public long toInt() {
        return value;
    }
}
