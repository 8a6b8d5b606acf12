package org.mobileexport.demo;

import java.io.File;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.json.JSONArray;
import org.json.JSONException;
import org.json.JSONObject;
import org.mobileexport.core.CarriedAssets;
import org.mobileexport.core.Encoding;
import org.mobileexport.core.ModelRunner;
import org.mobileexport.core.TfliteMetadata;
import org.tensorflow.lite.DataType;
import org.tensorflow.lite.Interpreter;
import org.tensorflow.lite.Tensor;

/**
 * model.tflite through LiteRT's Java Interpreter (XNNPACK, as the converter's default): one fixed length, int32
 * inputs {@code ids}, {@code mask}, {@code segment_ids} right-padded with zeros (the manifest's
 * {@code fixed-length-int32/1}); the assets the file carries are its named metadata entries, read by
 * {@link TfliteMetadata} (the Interpreter hands out none). An app that only classifies or embeds can instead give the
 * same file to MediaPipe Tasks Text's TextClassifier / TextEmbedder, which tokenizes from the file's own metadata.
 */
final class TfliteRunner implements ModelRunner, CarriedAssets, AutoCloseable {
    /** Where the .tflite records its fixed length and outputs (backends/litert/metadata.py). */
    static final String FACTS_KEY = "mobile_export.litert";
    static final String SIGNATURE = "serving_default";

    private final Interpreter interpreter;
    private final Map<String, byte[]> entries;
    private final int length;
    private final String[] outputs;
    private final Set<String> perToken = new HashSet<>();

    /** Loads the file (LiteRT maps it; the weights are not copied into the Java heap) with {@code threads} threads. */
    TfliteRunner(File model, int threads) throws Exception {
        entries = TfliteMetadata.entries(model.getAbsolutePath());
        String facts = TfliteMetadata.text(entries, FACTS_KEY);
        if (facts == null) {
            throw new IllegalStateException(model.getName() + " carries no " + FACTS_KEY + ": export it with "
                    + "mobile-export export --backend litert");
        }
        try {
            JSONObject recorded = new JSONObject(facts);
            length = recorded.getInt("sequence_length");
            JSONArray names = recorded.getJSONArray("outputs");
            outputs = new String[names.length()];
            for (int k = 0; k < outputs.length; k++) {
                outputs[k] = names.getString(k);
            }
            JSONArray cut = recorded.optJSONArray("per_token_outputs");
            for (int k = 0; cut != null && k < cut.length(); k++) {
                perToken.add(cut.getString(k));
            }
        } catch (JSONException e) {
            throw new IllegalStateException(model.getName() + " carries unreadable " + FACTS_KEY + ": "
                    + e.getMessage(), e);
        }
        Interpreter.Options options = new Interpreter.Options().setNumThreads(threads);
        interpreter = new Interpreter(model, options);
    }

    /** The file's one sequence length. */
    int fixedLength() {
        return length;
    }

    @Override
    public float[] run(Encoding in) {
        return runAll(in)[0];
    }

    @Override
    public float[][] runAll(Encoding in) {
        int n = in.length();
        if (n > length) {
            throw new IllegalArgumentException("the .tflite takes at most " + length + " tokens, got " + n
                    + ": cut the text there, or export with a larger --max-seq-len");
        }
        Map<String, Object> feeds = new HashMap<>();
        feeds.put("ids", padded(in.inputIds));
        feeds.put("mask", padded(in.attentionMask));
        feeds.put("segment_ids", padded(in.tokenTypeIds)); // zeros for a family without token types
        Map<String, Object> results = new HashMap<>();
        ByteBuffer[] buffers = new ByteBuffer[outputs.length];
        for (int k = 0; k < outputs.length; k++) {
            Tensor t = interpreter.getOutputTensorFromSignature("output_" + k, SIGNATURE);
            buffers[k] = ByteBuffer.allocateDirect(t.numBytes()).order(ByteOrder.nativeOrder());
            results.put("output_" + k, buffers[k]);
        }
        interpreter.runSignature(feeds, results, SIGNATURE);
        float[][] out = new float[outputs.length][];
        for (int k = 0; k < outputs.length; k++) {
            Tensor t = interpreter.getOutputTensorFromSignature("output_" + k, SIGNATURE);
            float[] all = floats(buffers[k], t.dataType(), t.numElements());
            // a per-token output of the padded run: only the text's own n rows
            int keep = perToken.contains(outputs[k]) ? all.length / length * n : all.length;
            out[k] = keep == all.length ? all : java.util.Arrays.copyOf(all, keep);
        }
        return out;
    }

    /** An output's elements as floats (ModelRunner.runAll: int64 and int32 ids are exact below 2^24). */
    private static float[] floats(ByteBuffer raw, DataType type, int count) {
        raw.rewind();
        float[] values = new float[count];
        for (int i = 0; i < count; i++) {
            if (type == DataType.FLOAT32) {
                values[i] = raw.getFloat();
            } else if (type == DataType.INT64) {
                values[i] = raw.getLong();
            } else if (type == DataType.INT32) {
                values[i] = raw.getInt();
            } else {
                throw new IllegalStateException("an output of the .tflite is " + type + ", not float or int");
            }
        }
        return values;
    }

    private int[][] padded(long[] values) {
        int[][] row = new int[1][length];
        for (int i = 0; i < values.length; i++) {
            row[0][i] = (int) values[i];
        }
        return row;
    }

    @Override
    public String name() {
        return "LiteRT .tflite";
    }

    @Override
    public String carried(String key) {
        return TfliteMetadata.text(entries, key);
    }

    @Override
    public void close() {
        interpreter.close();
    }
}
