package org.mobileexport.core;

import java.util.List;
import java.util.Locale;

/**
 * A pooled sentence embedding ({@code export --pooling cls|mean [--normalize]}): the model's output
 * {@code sentence_embedding} [1, H] already is the vector (pooled, and L2-normalized if the manifest's
 * {@code head.normalize} says so), so the app pools nothing; it reads the vector and compares vectors.
 */
public final class SentenceEmbedding {
    /** The output's name in {@code manifest.json}. */
    public static final String OUTPUT = "sentence_embedding";

    private SentenceEmbedding() {
    }

    /** The vector of one text's output (batch of one: the whole output). */
    public static float[] of(float[] output, int hidden) {
        if (output.length != hidden) {
            throw new IllegalArgumentException(
                    "sentence_embedding has " + output.length + " values, expected " + hidden + " (one [1, H] vector)");
        }
        return output;
    }

    /** Cosine similarity of two vectors (1 for two zero vectors, 0 when one of them is zero). */
    public static double cosine(float[] a, float[] b) {
        double dot = 0, na = 0, nb = 0;
        for (int i = 0; i < a.length; i++) {
            dot += (double) a[i] * b[i];
            na += (double) a[i] * a[i];
            nb += (double) b[i] * b[i];
        }
        if (na == 0 && nb == 0) {
            return 1;
        }
        if (na == 0 || nb == 0) {
            return 0;
        }
        return dot / Math.sqrt(na * nb);
    }

    /** The self-test's judge for embeddings: each vector's cosine to fp32's at least {@code minCosine}. */
    public static SelfTest.Judge judge(double minCosine) {
        return new SelfTest.Judge() {
            @Override
            public double error(float[] got, float[] expected) {
                return 1 - cosine(got, expected);
            }

            @Override
            public String failure(float[] got, float[] expected, double error) {
                double cos = 1 - error;
                return Double.isNaN(cos) || cos < minCosine
                        ? String.format(Locale.ROOT, "cosine %.5f < %.5f; ", cos, minCosine) : null;
            }

            @Override
            public String measure() {
                return "1 - lowest cosine";
            }
        };
    }

    /** The self-test for embeddings: same ids as Python, and every vector's cosine to fp32's at least {@code minCosine}. */
    public static SelfTest.Result check(List<SelfTest.Golden> golden, TextEncoder encoder, ModelRunner runner,
            double minCosine) {
        return SelfTest.run(golden, encoder, runner, judge(minCosine));
    }
}
