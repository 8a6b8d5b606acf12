package org.mobileexport.core;

/** Model inputs for one text: ids with [CLS]/[SEP], attention mask and token types (batch of one). */
public final class Encoding {
    public final long[] inputIds;
    public final long[] attentionMask;
    public final long[] tokenTypeIds;

    public Encoding(long[] inputIds, long[] tokenTypeIds) {
        this.inputIds = inputIds;
        this.tokenTypeIds = tokenTypeIds;
        this.attentionMask = new long[inputIds.length];
        java.util.Arrays.fill(attentionMask, 1L);
    }

    public int length() {
        return inputIds.length;
    }
}
