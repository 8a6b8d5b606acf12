package org.mobileexport.core;

import org.json.JSONArray;
import org.json.JSONException;

/** A set of code points stored as sorted, disjoint [first, last] ranges (as written by Python). */
public final class CodePointSet {
    private final int[] first;
    private final int[] last;

    private CodePointSet(int[] first, int[] last) {
        this.first = first;
        this.last = last;
    }

    public static final CodePointSet EMPTY = new CodePointSet(new int[0], new int[0]);

    /** Parses {@code [[first, last], ...]}; {@code null} gives the empty set. */
    public static CodePointSet fromJson(JSONArray ranges) throws JSONException {
        if (ranges == null) {
            return EMPTY;
        }
        int n = ranges.length();
        int[] f = new int[n];
        int[] l = new int[n];
        for (int i = 0; i < n; i++) {
            JSONArray r = ranges.getJSONArray(i);
            f[i] = r.getInt(0);
            l[i] = r.getInt(1);
            if (l[i] < f[i] || (i > 0 && f[i] <= l[i - 1])) {
                throw new JSONException("code point ranges must be sorted and disjoint");
            }
        }
        return new CodePointSet(f, l);
    }

    /** Builds a set from explicit code points (sorted or not). */
    public static CodePointSet of(int... cps) {
        int[] sorted = cps.clone();
        java.util.Arrays.sort(sorted);
        return new CodePointSet(sorted, sorted.clone());
    }

    /** Whether every code point of the set lies in [{@code lo}, {@code hi}]. */
    public boolean within(int lo, int hi) {
        return first.length == 0 || (first[0] >= lo && last[last.length - 1] <= hi);
    }

    public boolean contains(int cp) {
        int lo = 0;
        int hi = first.length - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (cp < first[mid]) {
                hi = mid - 1;
            } else if (cp > last[mid]) {
                lo = mid + 1;
            } else {
                return true;
            }
        }
        return false;
    }
}
