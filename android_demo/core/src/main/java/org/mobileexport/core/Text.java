package org.mobileexport.core;

/** Small text helpers shared by the tokenizers. */
public final class Text {
    private Text() {
    }

    /**
     * Unicode's White_Space property (what Rust's {@code char::is_whitespace} tests). It is a fixed
     * list, unlike {@link Character#isWhitespace}, which differs (no U+00A0, but U+001C..U+001F).
     */
    public static final CodePointSet WHITE_SPACE = CodePointSet.of(
            0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680,
            0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200A,
            0x2028, 0x2029, 0x202F, 0x205F, 0x3000);

    public static boolean isWhiteSpace(int cp) {
        return WHITE_SPACE.contains(cp);
    }

    /**
     * Makes {@code text} valid Unicode: each unpaired surrogate becomes U+FFFD (the rule the Python
     * side applies too, since the Rust tokenizer cannot take unpaired surrogates at all).
     */
    public static String sanitize(String text) {
        StringBuilder out = null;
        int n = text.length();
        for (int i = 0; i < n; i++) {
            char c = text.charAt(i);
            boolean bad;
            if (Character.isHighSurrogate(c)) {
                bad = i + 1 >= n || !Character.isLowSurrogate(text.charAt(i + 1));
                if (!bad) {
                    if (out != null) {
                        out.append(c).append(text.charAt(i + 1));
                    }
                    i++;
                    continue;
                }
            } else {
                bad = Character.isLowSurrogate(c);
            }
            if (bad && out == null) {
                out = new StringBuilder(n);
                out.append(text, 0, i);
            }
            if (out != null) {
                out.append(bad ? '\uFFFD' : c);
            }
        }
        return out == null ? text : out.toString();
    }

    /** Number of code points in {@code s}. */
    public static int codePoints(String s) {
        return s.codePointCount(0, s.length());
    }
}
