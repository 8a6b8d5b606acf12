package org.mobileexport.core;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.json.JSONArray;
import org.json.JSONException;
import org.json.JSONObject;

/**
 * ALBERT's SentencePiece unigram tokenizer as transformers runs it: plain-string replacements
 * ({@code ``} and {@code ''} to {@code "}), the character-wise steps (NFKD, accent stripping, lower
 * case; from the probed char table), the model's precompiled charsmap, split on white space,
 * Metaspace ({@code ▁}), then the best-scoring segmentation (Viterbi over the pieces' log
 * probabilities, unknown characters at min score - 10, consecutive unknowns fused).
 */
final class Unigram implements SegmentTokenizer {
    private static final double UNK_PENALTY = 10.0;

    private final Map<String, Integer> ids = new HashMap<>();
    private final double[] scores;
    private final int unkId;
    private final boolean fuseUnk;
    private final double minScore;
    private final int maxPieceChars;
    private final List<String[]> replacements = new ArrayList<>();
    private final CharTable table;
    private final Precompiled precompiled;
    private final int replacement;
    private final String prependScheme;
    private final boolean splitOnReplacement;

    Unigram(JSONObject spec, CharTable table) throws JSONException {
        JSONObject model = spec.getJSONObject("model");
        JSONArray vocab = model.getJSONArray("vocab");
        scores = new double[vocab.length()];
        double min = Double.POSITIVE_INFINITY;
        int longest = 1;
        for (int i = 0; i < vocab.length(); i++) {
            JSONArray entry = vocab.getJSONArray(i);
            String piece = entry.getString(0);
            ids.put(piece, i);
            scores[i] = entry.getDouble(1);
            min = Math.min(min, scores[i]);
            longest = Math.max(longest, piece.length());
        }
        minScore = min;
        maxPieceChars = longest;
        if (model.isNull("unk_id")) {
            throw new JSONException("the unigram model has no unk_id");
        }
        unkId = model.getInt("unk_id");
        fuseUnk = model.optBoolean("fuse_unk", true);
        if (model.optBoolean("byte_fallback", false)) {
            throw new JSONException("byte_fallback unigram models are not supported on device");
        }
        this.table = table;
        Precompiled pre = null;
        JSONObject norm = spec.optJSONObject("normalizer");
        JSONArray steps = norm == null ? new JSONArray()
                : norm.has("normalizers") ? norm.getJSONArray("normalizers") : new JSONArray().put(norm);
        for (int i = 0; i < steps.length(); i++) {
            JSONObject step = steps.getJSONObject(i);
            String type = step.getString("type");
            if (type.equals("Replace")) {
                if (step.getJSONObject("pattern").optString("String", "").isEmpty()) {
                    throw new JSONException("a Replace normalizer without a plain-string pattern is not supported on "
                            + "device");
                }
                replacements.add(new String[] {step.getJSONObject("pattern").getString("String"),
                        step.getString("content")});
            } else if (type.equals("Precompiled")) {
                if (!step.isNull("precompiled_charsmap")) {
                    pre = new Precompiled(step.getString("precompiled_charsmap"), table);
                }
            }
        }
        precompiled = pre;
        JSONObject pt = spec.getJSONObject("pre_tokenizer");
        JSONArray pts = pt.has("pretokenizers") ? pt.getJSONArray("pretokenizers") : new JSONArray().put(pt);
        JSONObject meta = pts.getJSONObject(pts.length() - 1);
        String rep = meta.optString("replacement", "\u2581");
        if (Text.codePoints(rep) != 1) {
            throw new JSONException("Metaspace replacement '" + rep + "' is not one character");
        }
        replacement = rep.codePointAt(0);
        prependScheme = meta.optString("prepend_scheme", "always");
        splitOnReplacement = meta.optBoolean("split", true);
    }

    /** The normaliser's steps in tokenizers' order: replacements, the char table, the precompiled charsmap. */
    AlignedText normalize(AlignedText text) {
        for (String[] r : replacements) {
            text = replace(text, r[0], r[1]);
        }
        text = table.normalize(text);
        return precompiled == null ? text : precompiled.normalize(text);
    }

    /** Every leftmost non-overlapping {@code pattern} in {@code in} replaced by {@code content}. */
    private static AlignedText replace(AlignedText in, String pattern, String content) {
        String text = in.toString();
        if (!text.contains(pattern)) {
            return in;
        }
        int patternCps = Text.codePoints(pattern);
        AlignedText out = new AlignedText(in.size());
        for (int pos = 0, c = 0; pos < text.length(); ) {
            if (text.startsWith(pattern, pos)) {
                out.addAll(content, in, c + patternCps - 1); // tokenizers inserts it after the match's last
                pos += pattern.length();
                c += patternCps;
            } else {
                out.add(in.cp(c), in.start(c), in.end(c));
                pos += Character.charCount(in.cp(c));
                c++;
            }
        }
        return out;
    }

    @Override
    public void tokenize(AlignedText text, boolean atStart, Tokens out) {
        AlignedText norm = normalize(text);
        // WhitespaceSplit, then Metaspace on each word.
        boolean first = true;
        int wordStart = -1;
        for (int i = 0; i <= norm.size(); i++) {
            if (i == norm.size() || Text.isWhiteSpace(norm.cp(i))) {
                if (wordStart >= 0) {
                    metaspace(norm.slice(wordStart, i), atStart && first, out);
                    first = false;
                    wordStart = -1;
                }
            } else if (wordStart < 0) {
                wordStart = i;
            }
        }
    }

    private void metaspace(AlignedText word, boolean atInputStart, Tokens out) {
        boolean prepend = prependScheme.equals("always") || (prependScheme.equals("first") && atInputStart);
        if (prepend && word.cp(0) != replacement) { // the mark takes the span of the character it precedes
            AlignedText marked = new AlignedText(word.size() + 1);
            marked.add(replacement, word.start(0), word.end(0));
            for (int i = 0; i < word.size(); i++) {
                marked.add(word.cp(i), word.start(i), word.end(i));
            }
            word = marked;
        }
        if (!splitOnReplacement) {
            encode(word, 0, word.size(), out);
            return;
        }
        int start = 0;
        for (int at = 1; at < word.size(); at++) {
            if (word.cp(at) == replacement) {
                encode(word, start, at, out);
                start = at;
            }
        }
        encode(word, start, word.size(), out);
    }

    /** Best segmentation of one pre-token, as tokenizers' optimized Viterbi (ties: earliest start). */
    private void encode(AlignedText word, int first, int last, Tokens out) {
        String s = word.text(first, last);
        int n = s.length();
        if (n == 0) {
            return;
        }
        double[] best = new double[n + 1];
        int[] from = new int[n + 1];
        int[] tokenId = new int[n + 1];
        java.util.Arrays.fill(from, -1);
        double unkScore = minScore - UNK_PENALTY;
        for (int start = 0; start < n; ) {
            double here = best[start];
            int charLen = Character.charCount(s.codePointAt(start));
            boolean single = false;
            for (int end = start + charLen; end - start <= maxPieceChars; ) {
                Integer id = ids.get(s.substring(start, end));
                if (id != null) {
                    double cand = scores[id] + here;
                    if (from[end] < 0 || cand > best[end]) {
                        best[end] = cand;
                        from[end] = start;
                        tokenId[end] = id;
                    }
                    if (end - start == charLen) {
                        single = true;
                    }
                }
                if (end == n) {
                    break;
                }
                end += Character.charCount(s.codePointAt(end));
            }
            if (!single) {
                int end = start + charLen;
                double cand = unkScore + here;
                if (from[end] < 0 || cand > best[end]) {
                    best[end] = cand;
                    from[end] = start;
                    tokenId[end] = unkId;
                }
            }
            start += charLen;
        }
        int[] cpOf = new int[n + 1]; // UTF-16 index -> code point index in s
        for (int u = 0, c = 0; u < n; c++) {
            int len = Character.charCount(s.codePointAt(u));
            for (int q = 1; q <= len; q++) {
                cpOf[u + q] = c + 1;
            }
            u += len;
        }
        List<int[]> pieces = new ArrayList<>(); // [start, end) in s, last first
        int unkEnd = -1; // end of the run of unknowns being fused, or -1
        for (int end = n; end > 0; ) {
            int start = from[end];
            if (fuseUnk && tokenId[end] == unkId) {
                if (unkEnd < 0) {
                    unkEnd = end;
                }
            } else {
                if (unkEnd >= 0) {
                    pieces.add(new int[] {end, unkEnd});
                    unkEnd = -1;
                }
                pieces.add(new int[] {start, end});
            }
            end = start;
        }
        if (unkEnd >= 0) {
            pieces.add(new int[] {0, unkEnd});
        }
        for (int k = pieces.size() - 1; k >= 0; k--) {
            int[] p = pieces.get(k);
            Integer id = ids.get(s.substring(p[0], p[1]));
            out.add(id != null ? id : unkId, word, first + cpOf[p[0]], first + cpOf[p[1]]);
        }
    }
}
