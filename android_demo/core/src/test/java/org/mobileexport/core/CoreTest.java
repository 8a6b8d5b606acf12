package org.mobileexport.core;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.json.JSONArray;
import org.json.JSONObject;
import org.junit.Test;

/** Unit tests of the parts that need no exported assets. */
public class CoreTest {
    @Test
    public void codePointSetFindsRangeMembersOnly() throws Exception {
        CodePointSet set = CodePointSet.fromJson(new JSONArray("[[10, 20], [30, 30], [0x1F600, 0x1F64F]]"));
        assertTrue(set.contains(10) && set.contains(15) && set.contains(20) && set.contains(30));
        assertTrue(set.contains(0x1F600));
        assertFalse(set.contains(9) || set.contains(21) || set.contains(29) || set.contains(31));
        assertFalse(CodePointSet.EMPTY.contains(0));
    }

    @Test
    public void codePointSetRejectsUnsortedRanges() {
        try {
            CodePointSet.fromJson(new JSONArray("[[30, 40], [10, 20]]"));
            fail("unsorted ranges accepted");
        } catch (org.json.JSONException expected) {
            assertTrue(expected.getMessage().contains("sorted"));
        }
    }

    private static JSONObject charTable(int schema, String hangul) throws Exception {
        return new JSONObject().put("schema_version", schema)
            .put("normalizer", new JSONObject().put("hangul", new JSONArray(hangul)));
    }

    @Test
    public void charTableDecomposesListedHangulSyllablesOnly() throws Exception {
        CharTable table = new CharTable(charTable(2, "[[44032, 44032], [44033, 55203]]"));
        // U+AC00 (no trailing consonant) -> 2 jamo; U+AC01 -> 3; U+D7A3, the last syllable -> 3
        assertEquals("\u1100\u1161", table.normalize("\uAC00"));
        assertEquals("\u1100\u1161\u11A8", table.normalize("\uAC01"));
        assertEquals("\u1112\u1175\u11C2", table.normalize("\uD7A3"));
        CharTable none = new CharTable(charTable(2, "[]"));
        assertEquals("\uAC00", none.normalize("\uAC00"));
    }

    @Test
    public void graphemesJoinEmojiSequencesAndHangulSyllablesAsTheRustSegmenterDoes() throws Exception {
        JSONObject json = charTable(3, "[]").put("graphemes", new JSONObject()
            .put("extend", new JSONArray("[[768, 879], [8205, 8205]]")) // combining marks, ZWJ
            .put("pictographic", new JSONArray("[[8252, 8252], [9731, 9731]]"))); // double exclamation, snowman
        CharTable table = new CharTable(json);
        String[][] cases = {
            {"\u2603\u200d\u203c\u0301", "x"}, // an emoji, ZWJ, an emoji (and its mark): one cluster
            {"a\u200d", "\u203c\u0301"}, // ZWJ after a letter joins no emoji
            {"\u2603\u0301", "\u203c"}, // nor does an emoji without ZWJ
            {"\u1100\u1161\u11a8\u0301", "x"}, // lead, vowel, final (and a mark)
            {"\uac00\u1161\u11a8\u11a8", "b"}, // an open syllable takes vowels and finals
            {"\uac01", "\u1161"}, // a closed one only finals
            {"\u11a8", "\u1100"}, // a final no lead
            {"\ua960\ud7b0\ud7cb", "\u1100"}, // the extended jamo blocks
        };
        for (String[] c : cases) {
            assertEquals(c[0] + "|" + c[1], c[0].length(), table.graphemeEnd(c[0] + c[1], 0));
        }
    }

    @Test
    public void charTableRefusesANewerSchemaAndStrayHangulRanges() throws Exception {
        for (JSONObject bad : new JSONObject[] {charTable(4, "[]"), charTable(2, "[[44031, 44032]]"),
                charTable(2, "[[55203, 55204]]")}) {
            try {
                new CharTable(bad);
                fail("accepted " + bad);
            } catch (org.json.JSONException expected) {
                assertTrue(expected.getMessage(), expected.getMessage().contains("schema")
                    || expected.getMessage().contains("Hangul"));
            }
        }
    }

    @Test
    public void sanitizeReplacesOnlyUnpairedSurrogates() {
        assertEquals("abc", Text.sanitize("abc"));
        String pair = new String(Character.toChars(0x1F600));
        assertEquals("a" + pair + "b", Text.sanitize("a" + pair + "b"));
        assertEquals("a\uFFFDb", Text.sanitize("a\uD800b"));
        assertEquals("\uFFFD", Text.sanitize("\uDC00"));
        assertEquals("x\uFFFD", Text.sanitize("x\uD83D"));
        assertEquals("\uFFFD\uFFFD", Text.sanitize("\uDC00\uD800"));
    }

    @Test
    public void whiteSpaceIsUnicodesPropertyNotJavas() {
        assertTrue(Text.isWhiteSpace(0xA0));
        assertTrue(Text.isWhiteSpace(0x3000));
        assertTrue(Text.isWhiteSpace(0x85));
        assertFalse(Text.isWhiteSpace(0x1C));
        assertFalse(Text.isWhiteSpace(0x200B));
    }

    private static List<String> describe(List<AddedTokens.Segment> segs) {
        List<String> out = new ArrayList<>();
        for (AddedTokens.Segment s : segs) {
            out.add(s.isToken() ? "#" + s.id : "'" + s.text + "'");
        }
        return out;
    }

    @Test
    public void addedTokensSplitLeftmostLongestWithStrip() throws Exception {
        JSONArray json = new JSONArray()
                .put(new JSONObject().put("content", "[MASK]").put("id", 4).put("lstrip", true))
                .put(new JSONObject().put("content", "[SEP]").put("id", 3).put("rstrip", true))
                .put(new JSONObject().put("content", "[SEP][SEP]").put("id", 9));
        AddedTokens added = new AddedTokens(json);
        assertEquals(Arrays.asList("'a'", "#4", "' b'"), describe(added.split("a  [MASK] b")));
        assertEquals(Arrays.asList("#9", "#3", "'x'"), describe(added.split("[SEP][SEP][SEP] x")));
        assertEquals(Arrays.asList("'no tokens'"), describe(added.split("no tokens")));
        assertEquals(new ArrayList<String>(), describe(added.split("")));
    }

    @Test
    public void normalizedAddedTokensAreRefused() throws Exception {
        JSONArray json = new JSONArray().put(new JSONObject().put("content", "x").put("id", 1).put("normalized", true));
        try {
            new AddedTokens(json);
            fail("normalized added token accepted");
        } catch (org.json.JSONException expected) {
            assertTrue(expected.getMessage().contains("normalized"));
        }
    }

    @Test
    public void softmaxIsStableAndSumsToOne() {
        double[] p = Classifier.softmax(new float[] {1000f, 0f, -1000f});
        assertEquals(1.0, p[0] + p[1] + p[2], 1e-12);
        assertEquals(1.0, p[0], 1e-12);
        double[] q = Classifier.softmax(new float[] {0f, (float) Math.log(3)});
        assertEquals(0.25, q[0], 1e-6);
        assertEquals(0.75, q[1], 1e-6);
    }

    @Test
    public void predictNamesTheLabel() {
        Classifier c = new Classifier(Arrays.asList("negative", "positive"));
        Classifier.Prediction p = c.predict(new float[] {-2f, 2.5f});
        assertEquals(1, p.index);
        assertEquals("positive", p.label);
        try {
            c.predict(new float[] {1f, 2f, 3f});
            fail("3 logits for 2 labels accepted");
        } catch (IllegalArgumentException expected) {
            assertTrue(expected.getMessage().contains("3 logits"));
        }
    }

    @Test
    public void decodeReplacesMalformedUtf8() {
        assertEquals("a\uFFFDb", TokenizeMain.decode(new byte[] {'a', (byte) 0xFF, 'b'}));
        assertEquals("\u4E2D", TokenizeMain.decode("\u4E2D".getBytes(StandardCharsets.UTF_8)));
        assertEquals("\uFFFD", TokenizeMain.decode(new byte[] {(byte) 0xE4, (byte) 0xB8}));
        // as Python's errors="replace": one U+FFFD per maximal ill-formed subpart (an encoded surrogate is three)
        assertEquals("\uFFFD\uFFFD\uFFFD x", TokenizeMain.decode(new byte[] {(byte) 0xED, (byte) 0xA0, (byte) 0x80,
            ' ', 'x'}));
        assertEquals("\uD83D\uDE00\uFFFD", TokenizeMain.decode(new byte[] {(byte) 0xF0, (byte) 0x9F, (byte) 0x98,
            (byte) 0x80, (byte) 0xF0, (byte) 0x9F}));
    }

    @Test
    public void manifestGivesToleranceAndSha256PerFile() throws Exception {
        Manifest m = new Manifest(new JSONObject("{\"artifacts\": [{\"file\": \"model.pte\", \"self_test_max_abs_diff\": 0.05},"
                + " {\"file\": \"model.onnx\", \"self_test_max_abs_diff\": 0.07}],"
                + " \"files\": [{\"path\": \"model.pte\", \"sha256\": \"ab12\"}]}"));
        assertEquals(0.05, m.selfTestTolerance("model.pte"), 0.0);
        assertEquals(0.07, m.selfTestTolerance("model.onnx"), 0.0);
        assertEquals("ab12", m.sha256("model.pte"));
        try {
            m.sha256("model.onnx");
            fail("a file the manifest does not list");
        } catch (java.io.IOException expected) {
            assertTrue(expected.getMessage().contains("model.onnx"));
        }
        try {
            m.selfTestTolerance("model.ort");
            fail("an artifact the manifest does not list");
        } catch (java.io.IOException expected) {
            assertTrue(expected.getMessage().contains("model.ort"));
        }
    }
}
