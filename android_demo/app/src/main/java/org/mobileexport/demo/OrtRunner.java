package org.mobileexport.demo;

import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.FloatBuffer;
import java.nio.LongBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.json.JSONArray;
import org.json.JSONException;
import org.json.JSONObject;
import org.mobileexport.core.CarriedAssets;
import org.mobileexport.core.Encoding;
import org.mobileexport.core.LengthGraphs;
import org.mobileexport.core.ModelRunner;

/**
 * model.onnx through ONNX Runtime's Android library (CPU execution provider), or the NPU file (model.qnn.onnx,
 * or model.SOC.qnn.onnx precompiled for this phone's SoC) on the Hexagon HTP through the QNN execution provider
 * ({@link #onHtp}); the assets the file carries are its custom metadata.
 */
final class OrtRunner implements ModelRunner, CarriedAssets, AutoCloseable {
    /** Where the NPU file records its fixed length and its per-token outputs (backends/qnn/metadata.py). */
    static final String QNN_FACTS_KEY = "mobile_export.qnn";

    private final OrtEnvironment env = OrtEnvironment.getEnvironment();
    private final OrtSession session;
    private final int fixedLength; // the NPU file's one sequence length; 0: any length (the CPU file)
    private final Set<String> perToken = new HashSet<>(); // outputs with one row per token, cut back after padding
    private final TreeMap<Integer, OrtSession> byLength = new TreeMap<>(); // an NPU file's shorter graphs
    private int lastLength; // the length the last text ran at (the shortest graph it fits)

    /** Loads the model from a file path: ONNX Runtime reads it natively, never as a Java byte[] copy. */
    OrtRunner(File model) throws OrtException {
        this(model, sessionOptions(Runtime.getRuntime().availableProcessors()));
    }

    /**
     * Loads the model with {@code options} (closed here; the sessions keep what they need). An NPU file with graphs
     * for several lengths ({@code --npu-lengths}) gets a session per length, each built from the file's weights and
     * its stored graph ({@link LengthGraphs}); a text runs in the shortest it fits.
     */
    OrtRunner(File model, OrtSession.SessionOptions options) throws OrtException {
        try (options) {
            session = env.createSession(model.getAbsolutePath(), options); // the session keeps a copy
            String facts = carried(QNN_FACTS_KEY);
            if (facts == null) {
                fixedLength = 0;
                return;
            }
            try {
                JSONObject recorded = new JSONObject(facts);
                fixedLength = recorded.getInt("sequence_length");
                JSONArray names = recorded.optJSONArray("per_token_outputs");
                for (int k = 0; names != null && k < names.length(); k++) {
                    perToken.add(names.getString(k));
                }
                JSONArray lengths = recorded.optJSONArray("lengths");
                if (lengths != null && lengths.length() > 1) {
                    shorter(model, options, new JSONObject(carried(LengthGraphs.KEY)), lengths);
                }
            } catch (JSONException | IOException | RuntimeException | OrtException e) {
                close();
                if (e instanceof OrtException) {
                    throw (OrtException) e;
                }
                throw new IllegalStateException(model.getName() + " carries unreadable facts or graphs: "
                        + e.getMessage(), e);
            }
        }
    }

    /** A session per shorter length the NPU file holds, built from its mapped bytes (the weights are not kept). */
    private void shorter(File model, OrtSession.SessionOptions options, JSONObject graphs, JSONArray lengths)
            throws JSONException, IOException, OrtException {
        ByteBuffer bytes;
        try (RandomAccessFile raf = new RandomAccessFile(model, "r"); FileChannel channel = raf.getChannel()) {
            bytes = channel.map(FileChannel.MapMode.READ_ONLY, 0, channel.size());
        }
        for (int k = 0; k < lengths.length(); k++) {
            int length = lengths.getInt(k);
            if (length < fixedLength) {
                byte[] built = LengthGraphs.modelFor(bytes, LengthGraphs.inflate(graphs.getString(String.valueOf(length))));
                byLength.put(length, env.createSession(built, options));
            }
        }
    }

    /**
     * The NPU file on this phone's HTP, every node on it (CPU fallback disabled: a session that loads runs on the
     * NPU). Throws {@link OrtException} where the phone has no HTP or ONNX Runtime was built without QNN: the app
     * then runs the CPU model.onnx.
     */
    static OrtRunner onHtp(File model) throws OrtException {
        return new OrtRunner(model, htpOptions());
    }

    /** The options of an HTP session: ONNX Runtime's Android API, SessionOptions.addQnn with the HTP backend. */
    static OrtSession.SessionOptions htpOptions() throws OrtException {
        OrtSession.SessionOptions options = new OrtSession.SessionOptions();
        try {
            options.addConfigEntry("session.disable_cpu_ep_fallback", "1");
            Map<String, String> qnn = new HashMap<>();
            qnn.put("backend_path", "libQnnHtp.so"); // the phone finds its SoC itself; the simulator is told it
            options.addQnn(qnn);
            return options;
        } catch (OrtException | RuntimeException e) {
            options.close();
            throw e;
        }
    }

    /** The file's one sequence length (the NPU file), or 0 when it takes any length. */
    int fixedLength() {
        return fixedLength;
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
        int n = in.length();
        if (fixedLength > 0 && n > fixedLength) {
            throw new IllegalArgumentException("the NPU file takes at most " + fixedLength + " tokens, got " + n
                    + ": cut the text there, or export with a larger --max-seq-len");
        }
        int length = fixedLength > 0 ? fixedLength : n; // the NPU file: right-padded with id 0, mask 0
        OrtSession chosen = session;
        Map.Entry<Integer, OrtSession> shortest = byLength.ceilingEntry(n);
        if (fixedLength > 0 && shortest != null) { // the shortest graph the text fits
            length = shortest.getKey();
            chosen = shortest.getValue();
        }
        lastLength = length;
        long[] shape = {1, length};
        Map<String, OnnxTensor> feeds = new HashMap<>();
        try {
            feeds.put("input_ids", OnnxTensor.createTensor(env, LongBuffer.wrap(padded(in.inputIds, length)), shape));
            feeds.put("attention_mask",
                    OnnxTensor.createTensor(env, LongBuffer.wrap(padded(in.attentionMask, length)), shape));
            if (chosen.getInputNames().contains("token_type_ids")) { // every family's but DistilBERT's
                feeds.put("token_type_ids",
                        OnnxTensor.createTensor(env, LongBuffer.wrap(padded(in.tokenTypeIds, length)), shape));
            }
            List<String> names = new ArrayList<>(chosen.getOutputNames());
            try (OrtSession.Result result = chosen.run(feeds)) {
                // every element of the batch of one, whatever the rank: [1, classes], [1, tokens, vocabulary], ...
                float[][] outputs = new float[result.size()][];
                for (int k = 0; k < outputs.length; k++) {
                    OnnxTensor tensor = (OnnxTensor) result.get(k);
                    FloatBuffer values = tensor.getFloatBuffer();
                    if (values == null) { // a top-k head's positions and ids are int64
                        outputs[k] = longsAsFloats(tensor.getLongBuffer(), k);
                        continue;
                    }
                    // a per-token output of the padded run: only the text's own n rows
                    int keep = perToken.contains(names.get(k)) ? values.remaining() / length * n : values.remaining();
                    outputs[k] = new float[keep];
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

    /** An int64 output as floats (ModelRunner.runAll); anything but float or int64 is refused. */
    private static float[] longsAsFloats(LongBuffer values, int k) {
        if (values == null) {
            throw new IllegalStateException("output " + k + " of the model is neither a float nor an int64 tensor");
        }
        float[] out = new float[values.remaining()];
        for (int i = 0; i < out.length; i++) {
            out[i] = values.get();
        }
        return out;
    }

    private static long[] padded(long[] values, int length) {
        return values.length == length ? values : Arrays.copyOf(values, length);
    }

    @Override
    public String name() {
        return fixedLength > 0 ? "ONNX Runtime .qnn.onnx" : "ONNX Runtime .onnx";
    }

    @Override
    public String carried(String key) throws OrtException {
        return session.getMetadata().getCustomMetadata().get(key);
    }

    /** The length the last text ran at: the file's, or the shortest of its graphs the text fit. */
    int lastLength() {
        return lastLength;
    }

    @Override
    public void close() throws OrtException {
        for (OrtSession s : byLength.values()) {
            s.close();
        }
        session.close();
    }
}
