package org.mobileexport.core;

/**
 * The answer to a question in its context, as {@code mobile-export run} and transformers' question-answering
 * pipeline decode it: the span of context tokens (at most {@link #MAX_TOKENS}) with the best start x end
 * probability, both softmaxed over the context tokens and [CLS] (which then drops out).
 */
public final class Answer {
    /** The pipelines' default max_answer_len. */
    public static final int MAX_TOKENS = 15;

    /** The answer as it stands in the context ("" when the model found none). */
    public final String text;
    /** Its start x end probability. */
    public final double score;
    /** Its span in the context, in UTF-16 chars (Java's string indices). */
    public final int start;
    public final int end;

    private Answer(String text, double score, int start, int end) {
        this.text = text;
        this.score = score;
        this.start = start;
        this.end = end;
    }

    /** The best answer from start and end logits over the tokens of {@code input} (question, then context). */
    static Answer decode(float[] startLogits, float[] endLogits, TextEncoder.Spans input, String context) {
        int n = input.input.length();
        if (startLogits.length != n || endLogits.length != n) {
            throw new IllegalStateException("start and end logits of " + startLogits.length + " and "
                    + endLogits.length + " values for " + n + " tokens; the model is not a question-answering head");
        }
        double[] pStart = probabilities(startLogits, input.sequence);
        double[] pEnd = probabilities(endLogits, input.sequence);
        int bestStart = -1;
        int bestEnd = -1;
        double best = 0;
        for (int i = 1; i < n; i++) { // row-major order, strictly greater: numpy's argmax keeps the first
            if (input.sequence[i] != 1) {
                continue;
            }
            for (int j = i; j < Math.min(n, i + MAX_TOKENS); j++) {
                if (input.sequence[j] == 1 && pStart[i] * pEnd[j] > best) {
                    best = pStart[i] * pEnd[j];
                    bestStart = i;
                    bestEnd = j;
                }
            }
        }
        if (bestStart < 0) {
            return new Answer("", 0, 0, 0);
        }
        int from = input.starts[bestStart];
        int to = input.ends[bestEnd];
        return new Answer(context.substring(from, to), best, from, to);
    }

    /** Softmax over the context tokens and [CLS] (the others at -10000), [CLS] then zeroed. */
    private static double[] probabilities(float[] logits, int[] sequence) {
        float[] masked = new float[logits.length];
        for (int i = 0; i < masked.length; i++) {
            masked[i] = i == 0 || sequence[i] == 1 ? logits[i] : -10000f;
        }
        double[] p = Classifier.softmax(masked);
        p[0] = 0;
        return p;
    }
}
