package org.mobileexport.core;

import java.util.HashMap;
import java.util.Map;
import org.json.JSONArray;
import org.json.JSONException;
import org.json.JSONObject;

/**
 * The tokenizer's character-wise Unicode behaviour as probed in Python ({@code char_table.json}),
 * so that the result never depends on the phone's own Unicode tables.
 */
public final class CharTable {
    /**
     * The newest {@code char_table.json} schema this reader applies fully (2: Hangul syllables as ranges; 3: emoji
     * sequences and Hangul syllable clusters).
     */
    public static final int SCHEMA = 3;

    private final CodePointSet delete;
    private final CodePointSet space;
    private final CodePointSet isolate;
    private final CodePointSet hangul;
    private final Map<Integer, String> mapped = new HashMap<>();
    final CodePointSet whitespace;
    final CodePointSet punctuation;
    final CodePointSet extend;
    final CodePointSet prepend;
    final CodePointSet control;
    final CodePointSet pictographic;
    final JSONObject byteLevel; // the byte-level BPE's letter, number and whitespace classes (null otherwise)

    public CharTable(JSONObject json) throws JSONException {
        int schema = json.optInt("schema_version", 1);
        if (schema > SCHEMA) {
            // a newer table may encode behaviour this reader would silently skip
            throw new JSONException("char_table.json has schema " + schema + ", this tokenizer reads up to "
                + SCHEMA + "; update mobile-export-core");
        }
        JSONObject norm = json.getJSONObject("normalizer");
        delete = CodePointSet.fromJson(norm.optJSONArray("delete"));
        space = CodePointSet.fromJson(norm.optJSONArray("space"));
        isolate = CodePointSet.fromJson(norm.optJSONArray("isolate"));
        hangul = CodePointSet.fromJson(norm.optJSONArray("hangul"));
        if (!hangul.within(0xAC00, 0xD7A3)) {
            throw new JSONException("char_table.json lists Hangul syllables outside U+AC00..U+D7A3");
        }
        JSONArray map = norm.optJSONArray("map");
        for (int i = 0; map != null && i < map.length(); i++) {
            JSONArray entry = map.getJSONArray(i);
            mapped.put(entry.getInt(0), entry.getString(1));
        }
        whitespace = CodePointSet.fromJson(json.optJSONArray("whitespace"));
        punctuation = CodePointSet.fromJson(json.optJSONArray("punctuation"));
        JSONObject g = json.optJSONObject("graphemes");
        extend = g == null ? CodePointSet.EMPTY : CodePointSet.fromJson(g.optJSONArray("extend"));
        prepend = g == null ? CodePointSet.EMPTY : CodePointSet.fromJson(g.optJSONArray("prepend"));
        control = g == null ? CodePointSet.EMPTY : CodePointSet.fromJson(g.optJSONArray("control"));
        pictographic = g == null ? CodePointSet.EMPTY : CodePointSet.fromJson(g.optJSONArray("pictographic"));
        byteLevel = json.optJSONObject("byte_level");
    }

    /** Applies the character-wise normalisation to every code point of {@code text}. */
    public String normalize(String text) {
        return normalize(AlignedText.of(text, 0)).toString();
    }

    /** The character-wise normalisation, each output code point keeping the span of the one it came from. */
    AlignedText normalize(AlignedText text) {
        AlignedText out = new AlignedText(text.size() + 8);
        StringBuilder one = new StringBuilder(4);
        for (int i = 0; i < text.size(); i++) {
            int cp = text.cp(i);
            String m = mapped.get(cp);
            if (m != null) {
                out.addAll(m, text, i);
            } else if (delete.contains(cp)) {
                continue;
            } else if (space.contains(cp)) {
                out.add(' ', text.start(i), text.end(i));
            } else if (isolate.contains(cp)) {
                out.add(' ', text.start(i), text.end(i));
                out.add(cp, text.start(i), text.end(i));
                out.add(' ', text.start(i), text.end(i));
            } else if (hangul.contains(cp)) {
                one.setLength(0);
                appendHangul(one, cp);
                out.addAll(one.toString(), text, i);
            } else {
                out.add(cp, text.start(i), text.end(i));
            }
        }
        return out;
    }

    /** Unicode's canonical decomposition of Hangul syllable {@code cp} (U+AC00..U+D7A3) into conjoining jamo. */
    static void appendHangul(StringBuilder out, int cp) {
        int s = cp - 0xAC00;
        out.append((char) (0x1100 + s / (21 * 28))).append((char) (0x1161 + s % (21 * 28) / 28));
        if (s % 28 != 0) {
            out.append((char) (0x11A7 + s % 28));
        }
    }

    /**
     * End (exclusive, in chars) of the extended grapheme cluster starting at {@code i}, as the Rust segmenter
     * tokenizers uses ends it: CR LF, prepend characters, a base, a Hangul syllable's jamo, its extending characters
     * and emoji joined by ZWJ. Regional-indicator pairs and Indic conjuncts are left out: they only join code points
     * into clusters of six or more UTF-8 bytes, which Precompiled maps code point by code point anyway, and what
     * follows them starts at a code point of four (or three, before marks of three) bytes, so again six or more.
     */
    int graphemeEnd(String s, int i) {
        int n = s.length();
        int cp = s.codePointAt(i);
        int j = i + Character.charCount(cp);
        if (cp == '\r') {
            return j < n && s.charAt(j) == '\n' ? j + 1 : j;
        }
        while (prepend.contains(cp) && j < n) {
            int next = s.codePointAt(j);
            if (control.contains(next)) {
                return j;
            }
            cp = next;
            j += Character.charCount(next);
        }
        if (control.contains(cp)) {
            return j;
        }
        while (j < n && Jamo.joins(cp, s.codePointAt(j))) {
            cp = s.codePointAt(j);
            j += Character.charCount(cp);
        }
        boolean emoji = pictographic.contains(cp);
        int last = cp;
        while (j < n) {
            int next = s.codePointAt(j);
            if (!extend.contains(next) && !(emoji && last == ZWJ && pictographic.contains(next))) {
                break;
            }
            last = next;
            j += Character.charCount(next);
        }
        return j;
    }

    private static final int ZWJ = 0x200D;
}
