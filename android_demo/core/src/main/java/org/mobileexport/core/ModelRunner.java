package org.mobileexport.core;

/** One runtime's forward pass (ExecuTorch, ONNX Runtime, or a fake in tests): inputs to logits. */
public interface ModelRunner {
    /** The first output for one encoded text (batch of one), every element in row-major order. */
    float[] run(Encoding input) throws Exception;

    /**
     * Every output for one encoded text, in the model's order, each flattened as {@link #run} flattens the first
     * (question answering needs its start and end logits); a runner that only has {@link #run} gives that alone.
     * An int64 output (a top-k fill-mask head's positions and token ids) comes as floats: exact for every value
     * below 2^24, far above any vocabulary's size or sequence length.
     */
    default float[][] runAll(Encoding input) throws Exception {
        return new float[][] {run(input)};
    }

    /** Short name shown in the app, e.g. "ExecuTorch (XNNPACK)". */
    String name();
}
