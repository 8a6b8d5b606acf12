package org.mobileexport.core;

/** One runtime's forward pass (ExecuTorch, ONNX Runtime, or a fake in tests): inputs to logits. */
public interface ModelRunner {
    /** The first output for one encoded text (batch of one), every element in row-major order. */
    float[] run(Encoding input) throws Exception;

    /** Short name shown in the app, e.g. "ExecuTorch (XNNPACK)". */
    String name();
}
