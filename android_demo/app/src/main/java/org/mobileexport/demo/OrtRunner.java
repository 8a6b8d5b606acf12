package org.mobileexport.demo;

import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import java.io.File;
import java.nio.FloatBuffer;
import java.nio.LongBuffer;
import java.util.HashMap;
import java.util.Map;
import org.mobileexport.core.CarriedAssets;
import org.mobileexport.core.Encoding;
import org.mobileexport.core.ModelRunner;

/**
 * model.onnx through ONNX Runtime's Android library (CPU execution provider); the assets the file carries are
 * its custom metadata.
 */
final class OrtRunner implements ModelRunner, CarriedAssets, AutoCloseable {
    private final OrtEnvironment env = OrtEnvironment.getEnvironment();
    private final OrtSession session;

    /** Loads the model from a file path: ONNX Runtime reads it natively, never as a Java byte[] copy. */
    OrtRunner(File model) throws OrtException {
        try (OrtSession.SessionOptions options = sessionOptions(Runtime.getRuntime().availableProcessors())) {
            session = env.createSession(model.getAbsolutePath(), options); // the session keeps a copy
        }
    }

    /** ONNX Runtime's session option that keeps x86 CPUs without VNNI off their saturating int8 kernel. */
    static final String X64_QUANT_PRECISION = "session.x64quantprecision";

    /** The options every session of the app is created with, for a device with {@code cores} processors. */
    static OrtSession.SessionOptions sessionOptions(int cores) throws OrtException {
        OrtSession.SessionOptions options = new OrtSession.SessionOptions();
        options.setOptimizationLevel(OrtSession.SessionOptions.OptLevel.ALL_OPT);
        // ONNX Runtime defaults to one thread per core, little cores included, which makes batch-1
        // latency worse on big.LITTLE phones; ExecuTorch's own default is half the processor count.
        // Half the cores, at most 4, is the usual sweet spot for a small encoder.
        options.setIntraOpNumThreads(intraOpThreads(cores));
        options.setInterOpNumThreads(1);
        // On an x86-64 CPU without VNNI (the Android Studio emulator on most desktops) ONNX Runtime's
        // u8 x s8 GEMM adds pairs of products into 16 bits and saturates; this option stores the main
        // graph's weights as u8 so the exact kernel runs. It cannot reach the weights an ALBERT Loop body
        // reads from the main graph, so there the emulator's results still differ slightly from a phone's
        // (Python's load() rewrites those itself). No effect on ARM64, whose kernels never saturate.
        options.addConfigEntry(X64_QUANT_PRECISION, "1");
        return options;
    }

    static int intraOpThreads(int cores) {
        return Math.max(1, Math.min(4, cores / 2));
    }

    @Override
    public float[] run(Encoding in) throws OrtException {
        return runAll(in)[0];
    }

    @Override
    public float[][] runAll(Encoding in) throws OrtException {
        long[] shape = {1, in.length()};
        Map<String, OnnxTensor> feeds = new HashMap<>();
        try {
            feeds.put("input_ids", OnnxTensor.createTensor(env, LongBuffer.wrap(in.inputIds), shape));
            feeds.put("attention_mask", OnnxTensor.createTensor(env, LongBuffer.wrap(in.attentionMask), shape));
            if (session.getInputNames().contains("token_type_ids")) { // every family's but DistilBERT's
                feeds.put("token_type_ids", OnnxTensor.createTensor(env, LongBuffer.wrap(in.tokenTypeIds), shape));
            }
            try (OrtSession.Result result = session.run(feeds)) {
                // every element of the batch of one, whatever the rank: [1, classes], [1, tokens, vocabulary], ...
                float[][] outputs = new float[result.size()][];
                for (int k = 0; k < outputs.length; k++) {
                    FloatBuffer values = ((OnnxTensor) result.get(k)).getFloatBuffer();
                    if (values == null) { // a top-k head's positions and ids are int64
                        throw new IllegalStateException("output " + k + " of the model is not a float tensor");
                    }
                    outputs[k] = new float[values.remaining()];
                    values.get(outputs[k]);
                }
                return outputs;
            }
        } finally {
            for (OnnxTensor t : feeds.values()) {
                t.close();
            }
        }
    }

    @Override
    public String name() {
        return "ONNX Runtime .onnx";
    }

    @Override
    public String carried(String key) throws OrtException {
        return session.getMetadata().getCustomMetadata().get(key);
    }

    @Override
    public void close() throws OrtException {
        session.close();
    }
}
