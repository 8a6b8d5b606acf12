package org.mobileexport.core;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Base64;

/**
 * SentencePiece's {@code precompiled_charsmap} normaliser as the Rust tokenizers library runs it:
 * a darts-clone double-array trie over UTF-8 bytes whose values point into a table of
 * NUL-terminated replacement strings. Like tokenizers, it looks up each grapheme cluster shorter than
 * six UTF-8 bytes as a whole (taking the shortest key that is a prefix of it), and otherwise each
 * code point on its own.
 */
public final class Precompiled {
    private final int[] units;
    private final byte[] normalized;
    private final CharTable table;

    public Precompiled(String base64, CharTable table) {
        byte[] blob = Base64.getDecoder().decode(base64);
        if (blob.length < 4) {
            throw new IllegalArgumentException("precompiled_charsmap is too short");
        }
        long trieSize = (blob[0] & 0xFFL) | (blob[1] & 0xFFL) << 8 | (blob[2] & 0xFFL) << 16 | (blob[3] & 0xFFL) << 24;
        if (trieSize % 4 != 0 || 4 + trieSize > blob.length) {
            throw new IllegalArgumentException("precompiled_charsmap has a bad trie size");
        }
        units = new int[(int) (trieSize / 4)];
        for (int k = 0; k < units.length; k++) {
            int p = 4 + 4 * k;
            units[k] = (blob[p] & 0xFF) | (blob[p + 1] & 0xFF) << 8 | (blob[p + 2] & 0xFF) << 16 | (blob[p + 3] & 0xFF) << 24;
        }
        normalized = new byte[blob.length - 4 - (int) trieSize];
        System.arraycopy(blob, 4 + (int) trieSize, normalized, 0, normalized.length);
        this.table = table;
    }

    /** Value of the shortest key that is a prefix of {@code key}, or -1. */
    private int firstPrefixValue(byte[] key) {
        int nodePos = 0;
        int unit = units[0];
        nodePos ^= offset(unit);
        for (byte b : key) {
            int c = b & 0xFF;
            if (c == 0) {
                break;
            }
            nodePos ^= c;
            if (nodePos < 0 || nodePos >= units.length) {
                return -1;
            }
            unit = units[nodePos];
            if ((unit & 0x800000FF) != c) {
                return -1;
            }
            nodePos ^= offset(unit);
            if (((unit >>> 8) & 1) == 1) {
                return units[nodePos] & 0x7FFFFFFF;
            }
        }
        return -1;
    }

    private static int offset(int unit) {
        return (unit >>> 10) << ((unit & (1 << 9)) >>> 6);
    }

    /** The replacement for {@code chunk}, or null when no rule matches. */
    String transform(String chunk) {
        int index = firstPrefixValue(chunk.getBytes(StandardCharsets.UTF_8));
        if (index < 0 || index > normalized.length) {
            return null;
        }
        int end = index;
        while (end < normalized.length && normalized[end] != 0) {
            end++;
        }
        return new String(normalized, index, end - index, StandardCharsets.UTF_8);
    }

    /**
     * The charsmap applied per grapheme (a whole grapheme of under six UTF-8 bytes first, else each code point),
     * aligned as tokenizers aligns it: each replacement's outputs take the replaced code points in order, extra
     * outputs are inserted after them, and a shorter replacement's missing code points are removed by the last
     * output so far, so that a removal before any output is lost and shifts every later span by one, as it does
     * in tokenizers.
     */
    AlignedText normalize(AlignedText in) {
        String text = in.toString();
        Changes changes = new Changes(in.size() + 8);
        int i = 0;
        while (i < text.length()) {
            int end = table.graphemeEnd(text, i);
            String grapheme = text.substring(i, end);
            String whole = grapheme.getBytes(StandardCharsets.UTF_8).length < 6 ? transform(grapheme) : null;
            if (whole != null) {
                changes.replace(Text.codePoints(grapheme), whole);
            } else {
                for (int k = 0; k < grapheme.length(); ) {
                    int cp = grapheme.codePointAt(k);
                    String part = grapheme.substring(k, k + Character.charCount(cp));
                    String norm = transform(part);
                    changes.replace(1, norm != null ? norm : part);
                    k += part.length();
                }
            }
            i = end;
        }
        return AlignedText.transformed(in, changes.cps, changes.changes, changes.size);
    }

    /** The (code point, change) list tokenizers' Precompiled builds before it transforms the text. */
    private static final class Changes {
        int[] cps;
        int[] changes;
        int size;

        Changes(int capacity) {
            cps = new int[capacity];
            changes = new int[capacity];
        }

        void replace(int oldCount, String replacement) {
            int newCount = 0;
            for (int k = 0; k < replacement.length(); newCount++) {
                int cp = replacement.codePointAt(k);
                if (size == cps.length) {
                    cps = Arrays.copyOf(cps, size * 2);
                    changes = Arrays.copyOf(changes, size * 2);
                }
                cps[size] = cp;
                changes[size++] = 0;
                k += Character.charCount(cp);
            }
            int diff = newCount - oldCount;
            if (diff > 0) {
                for (int k = size - diff; k < size; k++) {
                    changes[k] = 1;
                }
            } else if (diff < 0 && size > 0) {
                changes[size - 1] += diff;
            }
        }
    }
}
