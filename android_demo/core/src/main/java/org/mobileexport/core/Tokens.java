package org.mobileexport.core;

import java.util.Arrays;

/** Token ids with the span of the input each came from (UTF-16 indices, as transformers' offset mapping). */
final class Tokens {
    private int[] ids = new int[16];
    private int[] starts = new int[16];
    private int[] ends = new int[16];
    private int size;

    void add(int id, int start, int end) {
        if (size == ids.length) {
            ids = Arrays.copyOf(ids, size * 2);
            starts = Arrays.copyOf(starts, size * 2);
            ends = Arrays.copyOf(ends, size * 2);
        }
        ids[size] = id;
        starts[size] = start;
        ends[size] = end;
        size++;
    }

    /** A token made of {@code text}'s code points {@code [from, to)}. */
    void add(int id, AlignedText text, int from, int to) {
        add(id, text.start(from), text.end(to - 1));
    }

    int size() {
        return size;
    }

    int id(int i) {
        return ids[i];
    }

    int start(int i) {
        return starts[i];
    }

    int end(int i) {
        return ends[i];
    }
}
