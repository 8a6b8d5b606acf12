package org.mobileexport.core;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.json.JSONArray;
import org.json.JSONException;
import org.json.JSONObject;

/**
 * The on-device self-test: the export's {@code manifest.json} carries a few golden inputs with the
 * ids Python gave and the fp32 PyTorch logits. On the phone we tokenize the same text, run the
 * runtime and check that the ids are identical and the logits agree (same top class, max |diff|
 * within the tolerance).
 */
public final class SelfTest {
    /** One golden example. */
    public static final class Golden {
        public final String text;
        public final long[] inputIds;
        /** The first output's fp32 values (logits, or a sentence embedding). */
        public final float[] logits;

        public Golden(String text, long[] inputIds, float[] logits) {
            this.text = text;
            this.inputIds = inputIds;
            this.logits = logits;
        }
    }

    /** The verdict for one runtime. */
    public static final class Result {
        public final boolean idsMatch;
        public final boolean passed;
        public final double maxAbsDiff;
        public final int checked;
        public final String message;

        Result(boolean idsMatch, boolean passed, double maxAbsDiff, int checked, String message) {
            this.idsMatch = idsMatch;
            this.passed = passed;
            this.maxAbsDiff = maxAbsDiff;
            this.checked = checked;
            this.message = message;
        }
    }

    private SelfTest() {
    }

    /** Golden examples of {@code manifest.json}: the values of its first output ("logits", "sentence_embedding"). */
    public static List<Golden> load(AssetSource source, String manifest) throws IOException {
        try {
            JSONObject root = source.json(manifest);
            JSONArray names = root.optJSONArray("outputs");
            String output = names != null && names.length() > 0 ? names.getString(0) : "logits";
            JSONArray arr = root.getJSONArray("golden");
            List<Golden> out = new ArrayList<>();
            for (int i = 0; i < arr.length(); i++) {
                JSONObject g = arr.getJSONObject(i);
                JSONArray ids = g.getJSONArray("input_ids");
                long[] idArr = new long[ids.length()];
                for (int k = 0; k < idArr.length; k++) {
                    idArr[k] = ids.getLong(k);
                }
                JSONArray values = g.getJSONObject("outputs").getJSONObject(output).getJSONArray("values");
                float[] logits = new float[values.length()];
                for (int k = 0; k < logits.length; k++) {
                    logits[k] = (float) values.getDouble(k);
                }
                out.add(new Golden(g.getString("text"), idArr, logits));
            }
            return out;
        } catch (JSONException e) {
            throw new IOException(manifest + " has no usable golden examples: " + e.getMessage(), e);
        }
    }

    /** How one golden example's output is judged against fp32's. */
    public interface Judge {
        /** How far {@code got} is from {@code expected} (0: the same). */
        double error(float[] got, float[] expected);

        /** Why {@code got} fails, or null when it passes. */
        String failure(float[] got, float[] expected, double error);

        /** What {@link #error} measures, for the summary line (e.g. "max |diff|"). */
        String measure();
    }

    /** Logits: max |diff| within {@code tolerance} and the same top class. */
    public static Judge logits(double tolerance) {
        return new Judge() {
            @Override
            public double error(float[] got, float[] expected) {
                double diff = 0;
                for (int i = 0; i < got.length; i++) {
                    diff = Math.max(diff, Math.abs(got[i] - expected[i]));
                }
                return diff;
            }

            @Override
            public String failure(float[] got, float[] expected, double diff) {
                String why = "";
                if (Double.isNaN(diff) || diff > tolerance) {
                    why += String.format(Locale.ROOT, "max |diff| %.4g > %.4g; ", diff, tolerance);
                }
                if (Classifier.argmax(got) != Classifier.argmax(expected)) {
                    why += "top class differs; ";
                }
                return why.isEmpty() ? null : why;
            }

            @Override
            public String measure() {
                return "max |diff|";
            }
        };
    }

    /** Runs every golden example through {@code encoder} and {@code runner}; logits judged by {@link #logits}. */
    public static Result run(List<Golden> golden, TextEncoder encoder, ModelRunner runner, double tolerance) {
        return run(golden, encoder, runner, logits(tolerance));
    }

    /** Runs every golden example through {@code encoder} and {@code runner}, each output judged by {@code judge}. */
    public static Result run(List<Golden> golden, TextEncoder encoder, ModelRunner runner, Judge judge) {
        boolean idsMatch = true;
        boolean passed = !golden.isEmpty();
        double worst = 0;
        StringBuilder why = new StringBuilder();
        for (Golden g : golden) {
            Encoding enc = encoder.encode(g.text);
            if (!Arrays.equals(enc.inputIds, g.inputIds)) {
                idsMatch = false;
                passed = false;
                why.append("tokenizer ids differ from Python's; ");
                continue;
            }
            float[] got;
            try {
                got = runner.run(enc);
            } catch (Exception e) {
                return new Result(idsMatch, false, Double.NaN, 0, runner.name() + " failed: " + e);
            }
            if (got.length != g.logits.length) {
                return new Result(idsMatch, false, Double.NaN, 0,
                        runner.name() + " gave " + got.length + " values, expected " + g.logits.length);
            }
            double error = judge.error(got, g.logits);
            worst = Double.isNaN(error) ? error : Math.max(worst, error);
            String failure = judge.failure(got, g.logits, error);
            if (failure != null) {
                passed = false;
                why.append(failure);
            }
        }
        String message = golden.isEmpty() ? "no golden examples in the manifest"
                : passed ? String.format(Locale.ROOT, "%s agrees with PyTorch fp32 on %d examples (%s %.3g)",
                        runner.name(), golden.size(), judge.measure(), worst)
                : runner.name() + ": " + why.toString().trim();
        return new Result(idsMatch, passed, worst, golden.size(), message);
    }
}
