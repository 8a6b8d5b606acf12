package org.mobileexport.core;

import java.util.Arrays;

/**
 * Text as a tokenizer's steps rewrite it, each code point keeping the span of the input it came from (UTF-16
 * indices), so that tokens get transformers' character offsets: a code point a step turns into several gives each
 * of them its span, and a step that rewrites runs of code points aligns them as tokenizers' {@code NormalizedString}
 * does (see {@link #transformed}).
 */
final class AlignedText {
    private int[] cps;
    private int[] starts;
    private int[] ends;
    private int size;

    AlignedText(int capacity) {
        cps = new int[Math.max(capacity, 4)];
        starts = new int[cps.length];
        ends = new int[cps.length];
    }

    /** {@code text} as it is, its spans counted from {@code base}. */
    static AlignedText of(String text, int base) {
        AlignedText out = new AlignedText(text.length());
        for (int i = 0; i < text.length(); ) {
            int cp = text.codePointAt(i);
            int next = i + Character.charCount(cp);
            out.add(cp, base + i, base + next);
            i = next;
        }
        return out;
    }

    /** Appends {@code cp}, which came from the input's {@code [start, end)}. */
    void add(int cp, int start, int end) {
        if (size == cps.length) {
            int grown = size * 2;
            cps = Arrays.copyOf(cps, grown);
            starts = Arrays.copyOf(starts, grown);
            ends = Arrays.copyOf(ends, grown);
        }
        cps[size] = cp;
        starts[size] = start;
        ends[size] = end;
        size++;
    }

    /** Appends every code point of {@code s}, all from the span of this text's code point {@code from} in {@code src}. */
    void addAll(String s, AlignedText src, int from) {
        for (int i = 0; i < s.length(); ) {
            int cp = s.codePointAt(i);
            add(cp, src.starts[from], src.ends[from]);
            i += Character.charCount(cp);
        }
    }

    /**
     * {@code in} rewritten as tokenizers' {@code NormalizedString.transform} rewrites it: output code point k is
     * {@code cps[k]}, and {@code changes[k]} says what it takes of the input, read left to right: 0 the next input
     * code point (whose span it gets), -n that one and n more after it, +1 nothing (it is inserted, with the span of
     * the last input code point taken so far). Input code points left over at the end are dropped.
     */
    static AlignedText transformed(AlignedText in, int[] cps, int[] changes, int n) {
        AlignedText out = new AlignedText(n);
        int taken = 0;
        for (int k = 0; k < n; k++) {
            if (changes[k] > 0) {
                int at = Math.max(taken - 1, 0);
                out.add(cps[k], in.starts[at], in.ends[at]);
            } else {
                // tokenizers cannot take past the end (it would panic); clamp rather than throw on a phone
                int at = Math.min(taken, in.size - 1);
                out.add(cps[k], in.starts[at], in.ends[at]);
                taken += 1 - changes[k];
            }
        }
        return out;
    }

    int size() {
        return size;
    }

    int cp(int i) {
        return cps[i];
    }

    int start(int i) {
        return starts[i];
    }

    int end(int i) {
        return ends[i];
    }

    /** Code points {@code [from, to)} with their spans. */
    AlignedText slice(int from, int to) {
        AlignedText out = new AlignedText(to - from);
        for (int i = from; i < to; i++) {
            out.add(cps[i], starts[i], ends[i]);
        }
        return out;
    }

    /** Code points {@code [from, to)} as a string. */
    String text(int from, int to) {
        StringBuilder sb = new StringBuilder(to - from);
        for (int i = from; i < to; i++) {
            sb.appendCodePoint(cps[i]);
        }
        return sb.toString();
    }

    @Override
    public String toString() {
        return text(0, size);
    }
}
