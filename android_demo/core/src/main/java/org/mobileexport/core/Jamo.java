package org.mobileexport.core;

/**
 * Which Hangul code points a grapheme cluster joins (UAX #29 rules GB6 to GB8): a leading consonant to what can
 * follow it, a syllable or vowel without a final to a vowel or final, a final to a final. The classes are
 * fixed by Unicode since 5.2; {@code test_char_table} checks the Rust segmenter joins them so.
 */
final class Jamo {
    private static final int SYLLABLE_FIRST = 0xAC00;
    private static final int SYLLABLE_LAST = 0xD7A3;
    private static final int FINALS = 28;

    private Jamo() {
    }

    /** Whether a cluster that ends in {@code prev} takes {@code next} too. */
    static boolean joins(int prev, int next) {
        if (isLead(prev)) {
            return isLead(next) || isVowel(next) || isSyllable(next);
        }
        if (isVowel(prev) || isOpenSyllable(prev)) {
            return isVowel(next) || isFinal(next);
        }
        if (isFinal(prev) || isSyllable(prev)) {
            return isFinal(next);
        }
        return false;
    }

    private static boolean isLead(int cp) {
        return cp >= 0x1100 && cp <= 0x115F || cp >= 0xA960 && cp <= 0xA97C;
    }

    private static boolean isVowel(int cp) {
        return cp >= 0x1160 && cp <= 0x11A7 || cp >= 0xD7B0 && cp <= 0xD7C6;
    }

    private static boolean isFinal(int cp) {
        return cp >= 0x11A8 && cp <= 0x11FF || cp >= 0xD7CB && cp <= 0xD7FB;
    }

    private static boolean isSyllable(int cp) {
        return cp >= SYLLABLE_FIRST && cp <= SYLLABLE_LAST;
    }

    /** A syllable without a final consonant (LV), which a vowel may still follow. */
    private static boolean isOpenSyllable(int cp) {
        return isSyllable(cp) && (cp - SYLLABLE_FIRST) % FINALS == 0;
    }
}
