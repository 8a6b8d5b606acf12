package org.mobileexport.core;

/** Turns a stretch of text without added tokens into ids (normalise, pre-tokenize, model). */
interface SegmentTokenizer {
    /**
     * @param text a stretch of the input between added tokens, its spans in the whole input
     * @param atStart whether it starts at the beginning of the input
     * @param out where to append the tokens, with the spans of the input they came from
     */
    void tokenize(AlignedText text, boolean atStart, Tokens out);
}
