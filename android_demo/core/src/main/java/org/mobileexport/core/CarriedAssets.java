package org.mobileexport.core;

/**
 * A loaded model that carries its export's assets: each runner reads them through its runtime's own API
 * (ExecuTorch: a constant method returning a string; ONNX Runtime: the model's custom metadata).
 */
public interface CarriedAssets {
    /** The string the model carries under {@code key}, or null when it carries none. */
    String carried(String key) throws Exception;
}
