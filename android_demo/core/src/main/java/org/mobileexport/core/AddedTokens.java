package org.mobileexport.core;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.json.JSONArray;
import org.json.JSONException;
import org.json.JSONObject;

/**
 * The tokenizer's added (special) tokens, found in the raw text before normalisation as tokenizers
 * does: leftmost-longest match anywhere; {@code lstrip}/{@code rstrip} tokens also take the white
 * space next to them.
 */
final class AddedTokens {
    private static final class Token {
        final String content;
        final int id;
        final boolean lstrip;
        final boolean rstrip;

        Token(String content, int id, boolean lstrip, boolean rstrip) {
            this.content = content;
            this.id = id;
            this.lstrip = lstrip;
            this.rstrip = rstrip;
        }
    }

    /** A piece of the input: either an added token's id, or text to tokenize normally. */
    static final class Segment {
        final String text;
        final int id;
        final int start;
        final int end; // UTF-16 indices of the input: an added token's span takes the white space it strips

        Segment(String text, int id, int start, int end) {
            this.text = text;
            this.id = id;
            this.start = start;
            this.end = end;
        }

        boolean isToken() {
            return text == null;
        }
    }

    private final Token[] tokens;

    AddedTokens(JSONArray json) throws JSONException {
        List<Token> list = new ArrayList<>();
        for (int i = 0; json != null && i < json.length(); i++) {
            JSONObject t = json.getJSONObject(i);
            if (t.optBoolean("normalized", false) || t.optBoolean("single_word", false)) {
                throw new JSONException("added token " + t.getString("content") + " is normalized or single_word");
            }
            if (!t.getString("content").isEmpty()) {
                list.add(new Token(t.getString("content"), t.getInt("id"), t.optBoolean("lstrip", false),
                        t.optBoolean("rstrip", false)));
            }
        }
        tokens = list.toArray(new Token[0]);
        Arrays.sort(tokens, (a, b) -> b.content.length() - a.content.length());
    }

    List<Segment> split(String text) {
        List<Segment> out = new ArrayList<>();
        int startOffset = 0;
        int pos = 0;
        int n = text.length();
        while (pos < n) {
            Token found = null;
            for (Token t : tokens) {
                if (text.startsWith(t.content, pos)) {
                    found = t;
                    break;
                }
            }
            if (found == null) {
                pos++;
                continue;
            }
            int start = pos;
            int stop = pos + found.content.length();
            if (found.lstrip) {
                int s = start;
                while (s > 0) {
                    int cp = text.codePointBefore(s);
                    if (!Text.isWhiteSpace(cp)) {
                        break;
                    }
                    s -= Character.charCount(cp);
                }
                start = Math.max(s, startOffset);
            }
            if (found.rstrip) {
                while (stop < n) {
                    int cp = text.codePointAt(stop);
                    if (!Text.isWhiteSpace(cp)) {
                        break;
                    }
                    stop += Character.charCount(cp);
                }
            }
            if (startOffset < start) {
                out.add(new Segment(text.substring(startOffset, start), -1, startOffset, start));
            }
            out.add(new Segment(null, found.id, start, stop));
            startOffset = stop;
            pos = stop;
        }
        if (startOffset < n) {
            out.add(new Segment(text.substring(startOffset), -1, startOffset, n));
        }
        return out;
    }
}
