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
    private final String replacement;
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
        replacement = meta.optString("replacement", "\u2581");
        prependScheme = meta.optString("prepend_scheme", "always");
        splitOnReplacement = meta.optBoolean("split", true);
    }

    String normalize(String text) {
        for (String[] r : replacements) {
            text = text.replace(r[0], r[1]);
        }
        text = table.normalize(text);
        return precompiled == null ? text : precompiled.normalize(text);
    }

    @Override
    public void tokenize(String text, boolean atStart, List<Integer> out) {
        String norm = normalize(text);
        // WhitespaceSplit, then Metaspace on each word.
        boolean first = true;
        StringBuilder word = new StringBuilder();
        for (int i = 0; i <= norm.length(); ) {
            int cp = i < norm.length() ? norm.codePointAt(i) : ' ';
            i += i < norm.length() ? Character.charCount(cp) : 1;
            if (Text.isWhiteSpace(cp)) {
                if (word.length() > 0) {
                    metaspace(word.toString(), atStart && first, out);
                    first = false;
                    word.setLength(0);
                }
            } else {
                word.appendCodePoint(cp);
            }
        }
    }

    private void metaspace(String word, boolean atInputStart, List<Integer> out) {
        boolean prepend = prependScheme.equals("always") || (prependScheme.equals("first") && atInputStart);
        if (prepend && !word.startsWith(replacement)) {
            word = replacement + word;
        }
        if (!splitOnReplacement) {
            encode(word, out);
            return;
        }
        int start = 0;
        int at = word.indexOf(replacement, 1);
        while (at >= 0) {
            encode(word.substring(start, at), out);
            start = at;
            at = word.indexOf(replacement, at + replacement.length());
        }
        encode(word.substring(start), out);
    }

    /** Best segmentation of one pre-token, as tokenizers' optimized Viterbi (ties: earliest start). */
    private void encode(String s, List<Integer> out) {
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
        List<String> pieces = new ArrayList<>();
        StringBuilder unk = null;
        for (int end = n; end > 0; ) {
            int start = from[end];
            if (fuseUnk && tokenId[end] == unkId) {
                if (unk == null) {
                    unk = new StringBuilder();
                }
                unk.insert(0, s, start, end);
            } else {
                if (unk != null) {
                    pieces.add(unk.toString());
                    unk = null;
                }
                pieces.add(s.substring(start, end));
            }
            end = start;
        }
        if (unk != null) {
            pieces.add(unk.toString());
        }
        for (int k = pieces.size() - 1; k >= 0; k--) {
            Integer id = ids.get(pieces.get(k));
            out.add(id != null ? id : unkId);
        }
    }
}
