package org.mobileexport.core;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.json.JSONArray;
import org.json.JSONException;
import org.json.JSONObject;

/**
 * RoBERTa's (GPT-2's) byte-level BPE as tokenizers runs it: an optional prefix space per stretch of text, the
 * pre-tokenizer's regex ({@code 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+}) on the
 * letter, number and whitespace classes probed from the Rust library ({@code char_table.json}'s {@code byte_level}),
 * each piece's UTF-8 bytes as the characters of the byte-to-unicode table, then the merges applied lowest rank first
 * (leftmost among equals). Every byte of a character keeps that character's span, so a token gets the spans of the
 * characters its bytes came from.
 */
final class ByteLevelBpe implements SegmentTokenizer {
    private static final char[] BYTE_CHAR = byteChars();
    private static final int[] CHAR_BYTE = charBytes(); // by character (all below U+0200): its byte, or -1
    private static final int CACHE_WORDS = 10_000;

    private final Map<String, Integer> vocab = new HashMap<>();
    private final Map<String, Integer> ranks = new HashMap<>(); // "left right" -> rank (no byte char is a space)
    private final boolean addPrefixSpace;
    private final CodePointSet letters;
    private final CodePointSet numbers;
    private final CodePointSet spaces;
    private final Map<String, int[]> cache = new HashMap<>(); // words seen, emptied when it reaches CACHE_WORDS

    ByteLevelBpe(JSONObject spec, CharTable table) throws JSONException {
        JSONObject model = spec.getJSONObject("model");
        JSONObject v = model.getJSONObject("vocab");
        for (java.util.Iterator<String> it = v.keys(); it.hasNext(); ) {
            String token = it.next();
            vocab.put(token, v.getInt(token));
        }
        JSONArray merges = model.getJSONArray("merges");
        for (int i = 0; i < merges.length(); i++) {
            Object m = merges.get(i);
            // tokenizers writes [left, right]; older files "left right"
            String key = m instanceof JSONArray ? ((JSONArray) m).getString(0) + " " + ((JSONArray) m).getString(1)
                    : (String) m;
            ranks.putIfAbsent(key, i);
        }
        addPrefixSpace = spec.getJSONObject("pre_tokenizer").optBoolean("add_prefix_space", false);
        if (table.byteLevel == null) {
            throw new JSONException("char_table.json has no byte_level classes (re-export the tokenizer)");
        }
        letters = CodePointSet.fromJson(table.byteLevel.optJSONArray("letters"));
        numbers = CodePointSet.fromJson(table.byteLevel.optJSONArray("numbers"));
        spaces = CodePointSet.fromJson(table.byteLevel.optJSONArray("spaces"));
    }

    /** GPT-2's table: printable Latin-1 bytes stand for themselves, the others for U+0100 onwards in byte order. */
    private static char[] byteChars() {
        char[] out = new char[256];
        int n = 0;
        for (int b = 0; b < 256; b++) {
            boolean printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            out[b] = printable ? (char) b : (char) (256 + n++);
        }
        return out;
    }

    private static int[] charBytes() {
        int[] out = new int[0x200];
        java.util.Arrays.fill(out, -1);
        for (int b = 0; b < 256; b++) {
            out[BYTE_CHAR[b]] = b;
        }
        return out;
    }

    /** Bytes of a token's byte-level characters (null when one is not in the table: an added token's text). */
    static byte[] bytesOf(String token) {
        byte[] out = new byte[token.length()];
        for (int i = 0; i < token.length(); i++) {
            int b = indexOf(token.charAt(i));
            if (b < 0) {
                return null;
            }
            out[i] = (byte) b;
        }
        return out;
    }

    private static int indexOf(char c) {
        return c < CHAR_BYTE.length ? CHAR_BYTE[c] : -1;
    }

    /** What transformers' ByteLevel decoder makes of one token: its bytes as UTF-8, or the token as it is. */
    static String decode(String token) {
        byte[] bytes = bytesOf(token);
        return bytes == null ? token : new String(bytes, StandardCharsets.UTF_8);
    }

    @Override
    public void tokenize(AlignedText text, boolean atStart, Tokens out) {
        if (text.size() == 0) {
            return;
        }
        AlignedText t = text;
        if (addPrefixSpace && text.cp(0) != ' ') { // tokenizers' prepend: the space takes the first character's span
            t = new AlignedText(text.size() + 1);
            t.add(' ', text.start(0), text.end(0));
            for (int i = 0; i < text.size(); i++) {
                t.add(text.cp(i), text.start(i), text.end(i));
            }
        }
        int at = 0;
        while (at < t.size()) {
            int end = match(t, at);
            piece(t, at, end, out);
            at = end;
        }
    }

    private static final String[] CONTRACTIONS = {"s", "t", "re", "ve", "m", "ll", "d"};

    /** Where the regex's match starting at {@code at} ends (it always matches at least one code point). */
    private int match(AlignedText t, int at) {
        int n = t.size();
        int c = t.cp(at);
        if (c == '\'') {
            for (String s : CONTRACTIONS) {
                if (startsWith(t, at + 1, s)) {
                    return at + 1 + s.length();
                }
            }
        }
        int from = c == ' ' && at + 1 < n ? at + 1 : at; // " ?" before a letter, number or other run
        int next = t.cp(from);
        if (from == at || !spaces.contains(next)) {
            if (letters.contains(next)) {
                return run(t, from, 0);
            }
            if (numbers.contains(next)) {
                return run(t, from, 1);
            }
            if (!spaces.contains(next)) {
                return run(t, from, 2);
            }
        }
        // whitespace: \s+(?!\S), else \s+
        int end = at;
        while (end < n && spaces.contains(t.cp(end))) {
            end++;
        }
        if (end == n || end - at == 1) {
            return end;
        }
        return end - 1; // leave the last whitespace to the next word
    }

    private boolean startsWith(AlignedText t, int at, String s) {
        if (at + s.length() > t.size()) {
            return false;
        }
        for (int i = 0; i < s.length(); i++) {
            if (t.cp(at + i) != s.charAt(i)) {
                return false;
            }
        }
        return true;
    }

    /** The end of the run from {@code at} of letters (0), numbers (1) or neither-nor-whitespace (2). */
    private int run(AlignedText t, int at, int kind) {
        int end = at;
        while (end < t.size()) {
            int c = t.cp(end);
            boolean in = kind == 0 ? letters.contains(c) : kind == 1 ? numbers.contains(c)
                    : !letters.contains(c) && !numbers.contains(c) && !spaces.contains(c);
            if (!in) {
                break;
            }
            end++;
        }
        return end;
    }

    /** Code points {@code [from, to)} of {@code t} as byte-level tokens appended to {@code out}. */
    private void piece(AlignedText t, int from, int to, Tokens out) {
        StringBuilder word = new StringBuilder();
        List<Integer> source = new ArrayList<>(); // per byte character: the code point it came from
        for (int i = from; i < to; i++) {
            byte[] bytes = new String(Character.toChars(t.cp(i))).getBytes(StandardCharsets.UTF_8);
            for (byte b : bytes) {
                word.append(BYTE_CHAR[b & 0xFF]);
                source.add(i);
            }
        }
        int[] merged = cache.get(word.toString());
        if (merged == null) {
            merged = merge(word.toString());
            if (cache.size() >= CACHE_WORDS) {
                cache.clear();
            }
            cache.put(word.toString(), merged);
        }
        for (int k = 0; k < merged.length; k += 3) { // (id, first byte, end byte)
            out.add(merged[k], t.start(source.get(merged[k + 1])), t.end(source.get(merged[k + 2] - 1)));
        }
    }

    /** {@code word}'s tokens as (id, first byte, end byte) triples: tokenizers' Word.merge_all. */
    private int[] merge(String word) {
        List<String> symbols = new ArrayList<>();
        List<Integer> starts = new ArrayList<>();
        for (int i = 0; i < word.length(); i++) {
            String s = String.valueOf(word.charAt(i));
            if (vocab.containsKey(s)) { // a byte missing from the vocabulary is dropped (no unknown token)
                symbols.add(s);
                starts.add(i);
            }
        }
        while (symbols.size() > 1) {
            int best = -1;
            int bestRank = Integer.MAX_VALUE;
            for (int i = 0; i + 1 < symbols.size(); i++) {
                Integer rank = ranks.get(symbols.get(i) + " " + symbols.get(i + 1));
                if (rank != null && rank < bestRank && vocab.containsKey(symbols.get(i) + symbols.get(i + 1))) {
                    best = i;
                    bestRank = rank;
                }
            }
            if (best < 0) {
                break;
            }
            symbols.set(best, symbols.get(best) + symbols.remove(best + 1));
            starts.remove(best + 1);
        }
        int[] out = new int[symbols.size() * 3];
        for (int i = 0; i < symbols.size(); i++) {
            out[3 * i] = vocab.get(symbols.get(i));
            out[3 * i + 1] = starts.get(i);
            out[3 * i + 2] = starts.get(i) + symbols.get(i).length();
        }
        return out;
    }
}
