package org.mobileexport.demo;

import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import java.io.File;
import java.nio.LongBuffer;
import java.util.HashMap;
import java.util.Map;
import org.mobileexport.core.Encoding;
import org.mobileexport.core.ModelRunner;

/** model.onnx through ONNX Runtime's Android library (CPU execution provider). */
final class OrtRunner implements ModelRunner, AutoCloseable {
    private final OrtEnvironment env = OrtEnvironment.getEnvironment();
    private final OrtSession session;

    /** Loads the model from a file path: ONNX Runtime reads it natively, never as a Java byte[] copy. */
    OrtRunner(File model) throws OrtException {
        try (OrtSession.SessionOptions options = new OrtSession.SessionOptions()) { // the session keeps a copy
            options.setOptimizationLevel(OrtSession.SessionOptions.OptLevel.ALL_OPT);
            // ONNX Runtime defaults to one thread per core, little cores included, which makes batch-1
            // latency worse on big.LITTLE phones; ExecuTorch's own default is half the processor count.
            // Half the cores, at most 4, is the usual sweet spot for a small encoder.
            options.setIntraOpNumThreads(intraOpThreads(Runtime.getRuntime().availableProcessors()));
            options.setInterOpNumThreads(1);
            session = env.createSession(model.getAbsolutePath(), options);
        }
    }

    static int intraOpThreads(int cores) {
        return Math.max(1, Math.min(4, cores / 2));
    }

    @Override
    public float[] run(Encoding in) throws OrtException {
        long[] shape = {1, in.length()};
        Map<String, OnnxTensor> feeds = new HashMap<>();
        try {
            feeds.put("input_ids", OnnxTensor.createTensor(env, LongBuffer.wrap(in.inputIds), shape));
            feeds.put("attention_mask", OnnxTensor.createTensor(env, LongBuffer.wrap(in.attentionMask), shape));
            feeds.put("token_type_ids", OnnxTensor.createTensor(env, LongBuffer.wrap(in.tokenTypeIds), shape));
            try (OrtSession.Result result = session.run(feeds)) {
                return ((float[][]) result.get(0).getValue())[0];
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
    public void close() throws OrtException {
        session.close();
    }
}
