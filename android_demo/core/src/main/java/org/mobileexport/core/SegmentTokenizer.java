package org.mobileexport.core;

import java.util.List;

/** Turns a stretch of text without added tokens into ids (normalise, pre-tokenize, model). */
interface SegmentTokenizer {
    /**
     * @param text a stretch of the input between added tokens
     * @param atStart whether it starts at the beginning of the input
     * @param ids where to append the ids
     */
    void tokenize(String text, boolean atStart, List<Integer> ids);
}
