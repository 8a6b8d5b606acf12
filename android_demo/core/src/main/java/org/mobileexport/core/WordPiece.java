package org.mobileexport.core;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.json.JSONException;
import org.json.JSONObject;

/**
 * BERT's tokenizer (as BertTokenizer in transformers): the BERT normaliser (cleaning, CJK isolation,
 * accents, lower case; from the probed char table), split on white space and punctuation, then
 * greedy longest-match-first WordPiece with the {@code ##} continuation prefix.
 */
final class WordPiece implements SegmentTokenizer {
    private final Map<String, Integer> vocab = new HashMap<>();
    private final CharTable table;
    private final int unkId;
    private final String prefix;
    private final int maxChars;

    WordPiece(JSONObject model, CharTable table) throws JSONException {
        JSONObject v = model.getJSONObject("vocab");
        for (Iterator<String> it = v.keys(); it.hasNext(); ) {
            String token = it.next();
            vocab.put(token, v.getInt(token));
        }
        String unk = model.getString("unk_token");
        if (!vocab.containsKey(unk)) {
            throw new JSONException("the WordPiece vocabulary has no unk token " + unk);
        }
        unkId = vocab.get(unk);
        prefix = model.optString("continuing_subword_prefix", "##");
        maxChars = model.optInt("max_input_chars_per_word", 100);
        this.table = table;
    }

    @Override
    public void tokenize(AlignedText text, boolean atStart, Tokens out) {
        AlignedText norm = table.normalize(text);
        int wordStart = -1;
        for (int i = 0; i < norm.size(); i++) {
            int cp = norm.cp(i);
            boolean space = table.whitespace.contains(cp);
            if (space || table.punctuation.contains(cp)) {
                if (wordStart >= 0) {
                    wordPiece(norm, wordStart, i, out);
                    wordStart = -1;
                }
                if (!space) {
                    wordPiece(norm, i, i + 1, out);
                }
            } else if (wordStart < 0) {
                wordStart = i;
            }
        }
        if (wordStart >= 0) {
            wordPiece(norm, wordStart, norm.size(), out);
        }
    }

    /** Greedy longest-match-first pieces of the word {@code text[first, last)}; the whole word unknown if one is. */
    private void wordPiece(AlignedText text, int first, int last, Tokens out) {
        if (last - first > maxChars) {
            out.add(unkId, text, first, last);
            return;
        }
        String word = text.text(first, last);
        List<int[]> pieces = new ArrayList<>(); // id, first code point, end code point
        int start = 0;
        int startCp = first;
        while (start < word.length()) {
            int end = word.length();
            int endCp = last;
            Integer found = null;
            while (start < end) {
                String sub = word.substring(start, end);
                found = vocab.get(start > 0 ? prefix + sub : sub);
                if (found != null) {
                    break;
                }
                end -= Character.charCount(word.codePointBefore(end));
                endCp--;
            }
            if (found == null) {
                out.add(unkId, text, first, last);
                return;
            }
            pieces.add(new int[] {found, startCp, endCp});
            start = end;
            startCp = endCp;
        }
        for (int[] p : pieces) {
            out.add(p[0], text, p[1], p[2]);
        }
    }
}
