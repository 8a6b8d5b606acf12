package org.pytorch.executorch;

/** A JVM fake of ExecuTorch's {@code EValue}: a tensor, an int or a string (see Module.java). */
public final class EValue {
    private final Tensor tensor;
    private final long value;
    private final String text;

    private EValue(Tensor tensor, long value, String text) {
        this.tensor = tensor;
        this.value = value;
        this.text = text;
    }

    public static EValue from(Tensor tensor) {
        return new EValue(tensor, 0, null);
    }

    public static EValue from(long value) {
        return new EValue(null, value, null);
    }

    public static EValue from(String text) {
        return new EValue(null, 0, text);
    }

    public String toStr() {
        if (text == null) {
            throw new IllegalStateException("not a string");
        }
        return text;
    }

    public Tensor toTensor() {
        return tensor;
    }

    public long toInt() {
        return value;
    }
}
