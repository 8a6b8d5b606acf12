package org.mobileexport.core;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/** The best tokens at one mask position of a text, best first (what {@code mobile-export run} prints for fill-mask). */
public final class MaskFill {
    /** One candidate token: its id, its text as transformers decodes it alone, its softmax probability. */
    public static final class Candidate {
        public final int id;
        public final String token;
        public final double score;

        Candidate(int id, String token, double score) {
            this.id = id;
            this.token = token;
            this.score = score;
        }
    }

    /** The mask's token index in the encoded text ([CLS] is 0). */
    public final int position;
    public final List<Candidate> candidates;

    private MaskFill(int position, List<Candidate> candidates) {
        this.position = position;
        this.candidates = Collections.unmodifiableList(candidates);
    }

    /**
     * The best tokens at every mask from a {@code --head topk} model's outputs (its card's {@code mask_positions},
     * {@code top_ids}, {@code top_scores}: one slot per mask in order, position -1 for an empty slot, the head's K
     * ids and probabilities per slot, best first), the first {@code k} of each (k above K: all K).
     */
    static List<MaskFill> fromTopK(float[] positions, float[] ids, float[] scores, TextEncoder encoder, int k) {
        int slots = positions.length;
        if (slots == 0 || ids.length % slots != 0 || scores.length != ids.length) {
            throw new IllegalStateException("a top-k head's outputs have " + slots + " slots, " + ids.length
                    + " ids and " + scores.length + " scores; the model is not a --head topk fill-mask file");
        }
        int per = ids.length / slots;
        List<MaskFill> out = new ArrayList<>();
        for (int s = 0; s < slots && positions[s] >= 0; s++) {
            List<Candidate> best = new ArrayList<>();
            for (int r = 0; r < Math.min(k, per); r++) {
                int id = (int) ids[s * per + r];
                best.add(new Candidate(id, encoder.tokenOf(id), scores[s * per + r]));
            }
            out.add(new MaskFill((int) positions[s], best));
        }
        return out;
    }

    /**
     * The top {@code k} tokens at every mask of {@code input} from a full fill-mask head's logits ({@code [tokens,
     * vocabulary]}, row-major): softmax over each mask's row, in double precision as Python's decoding does.
     */
    static List<MaskFill> decode(float[] logits, Encoding input, TextEncoder encoder, int k) {
        int n = input.length();
        if (n == 0 || logits.length % n != 0) {
            throw new IllegalStateException("fill-mask logits of " + logits.length + " values do not divide into "
                    + n + " tokens; the model is not a full fill-mask head");
        }
        int vocab = logits.length / n;
        List<MaskFill> out = new ArrayList<>();
        for (int pos = 0; pos < n; pos++) {
            if (input.inputIds[pos] != encoder.maskId()) {
                continue;
            }
            int row = pos * vocab;
            double max = Double.NEGATIVE_INFINITY;
            for (int t = 0; t < vocab; t++) {
                max = Math.max(max, logits[row + t]);
            }
            double[] p = new double[vocab];
            double sum = 0;
            for (int t = 0; t < vocab; t++) {
                p[t] = Math.exp(logits[row + t] - max);
                sum += p[t];
            }
            List<Candidate> best = new ArrayList<>();
            boolean[] taken = new boolean[vocab];
            for (int r = 0; r < Math.min(k, vocab); r++) { // k is small: k passes over the row
                int top = -1;
                for (int t = 0; t < vocab; t++) {
                    if (!taken[t] && (top < 0 || p[t] > p[top])) {
                        top = t;
                    }
                }
                taken[top] = true;
                best.add(new Candidate(top, encoder.tokenOf(top), p[top] / sum));
            }
            out.add(new MaskFill(pos, best));
        }
        return out;
    }
}
