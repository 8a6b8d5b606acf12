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
    public void tokenize(String text, boolean atStart, List<Integer> ids) {
        String norm = table.normalize(text);
        StringBuilder word = new StringBuilder();
        for (int i = 0; i < norm.length(); ) {
            int cp = norm.codePointAt(i);
            i += Character.charCount(cp);
            if (table.whitespace.contains(cp)) {
                flush(word, ids);
            } else if (table.punctuation.contains(cp)) {
                flush(word, ids);
                word.appendCodePoint(cp);
                flush(word, ids);
            } else {
                word.appendCodePoint(cp);
            }
        }
        flush(word, ids);
    }

    private void flush(StringBuilder word, List<Integer> ids) {
        if (word.length() > 0) {
            wordPiece(word.toString(), ids);
            word.setLength(0);
        }
    }

    private void wordPiece(String word, List<Integer> ids) {
        if (Text.codePoints(word) > maxChars) {
            ids.add(unkId);
            return;
        }
        List<Integer> pieces = new ArrayList<>();
        int start = 0;
        while (start < word.length()) {
            int end = word.length();
            Integer found = null;
            while (start < end) {
                String sub = word.substring(start, end);
                found = vocab.get(start > 0 ? prefix + sub : sub);
                if (found != null) {
                    break;
                }
                end -= Character.charCount(word.codePointBefore(end));
            }
            if (found == null) {
                ids.add(unkId);
                return;
            }
            pieces.add(found);
            start = end;
        }
        ids.addAll(pieces);
    }
}
