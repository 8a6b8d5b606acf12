package org.mobileexport.core;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.json.JSONArray;
import org.json.JSONException;

/** Labels and probabilities from logits. */
public final class Classifier {
    private final List<String> labels;

    public Classifier(List<String> labels) {
        this.labels = Collections.unmodifiableList(new ArrayList<>(labels));
    }

    /** Reads {@code labels.json} ({"labels": [...]}) as written by the export. */
    public static Classifier load(AssetSource source, String name) throws IOException {
        try {
            JSONArray arr = source.json(name).getJSONArray("labels");
            List<String> labels = new ArrayList<>();
            for (int i = 0; i < arr.length(); i++) {
                labels.add(arr.getString(i));
            }
            return new Classifier(labels);
        } catch (JSONException e) {
            throw new IOException(name + " has no \"labels\" list: " + e.getMessage(), e);
        }
    }

    public List<String> labels() {
        return labels;
    }

    /** Numerically stable softmax (subtracts the maximum first). */
    public static double[] softmax(float[] logits) {
        double max = Double.NEGATIVE_INFINITY;
        for (float v : logits) {
            max = Math.max(max, v);
        }
        double[] p = new double[logits.length];
        double sum = 0;
        for (int i = 0; i < logits.length; i++) {
            p[i] = Math.exp(logits[i] - max);
            sum += p[i];
        }
        for (int i = 0; i < p.length; i++) {
            p[i] /= sum;
        }
        return p;
    }

    public static int argmax(float[] values) {
        int best = 0;
        for (int i = 1; i < values.length; i++) {
            if (values[i] > values[best]) {
                best = i;
            }
        }
        return best;
    }

    /** The predicted label, its index and every class's probability. */
    public Prediction predict(float[] logits) {
        if (logits.length != labels.size()) {
            throw new IllegalArgumentException("model gave " + logits.length + " logits but there are "
                    + labels.size() + " labels");
        }
        int best = argmax(logits);
        return new Prediction(best, labels.get(best), softmax(logits));
    }

    public static final class Prediction {
        public final int index;
        public final String label;
        public final double[] probabilities;

        Prediction(int index, String label, double[] probabilities) {
            this.index = index;
            this.label = label;
            this.probabilities = probabilities;
        }
    }
}
