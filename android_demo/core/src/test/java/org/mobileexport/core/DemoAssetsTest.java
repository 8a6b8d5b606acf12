package org.mobileexport.core;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.io.IOException;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * Tests on the bundled demo model's tokenizer assets, exported by {@code make android-junit} into
 * the folder named by the system property {@code mobileexport.assets}.
 */
public class DemoAssetsTest {
    private static TextEncoder encoder;
    // 这家餐厅的菜真好吃 through the demo model's BertTokenizer (transformers), with [CLS]=2 and [SEP]=3.
    private static final long[] RESTAURANT = {2, 16, 90, 138, 489, 6, 642, 115, 18, 331, 3};

    @BeforeClass
    public static void load() throws IOException {
        String dir = System.getProperty("mobileexport.assets");
        assertTrue("set -Dmobileexport.assets=DIR (make android-junit does)", dir != null);
        encoder = TextEncoder.load(AssetSource.directory(new File(dir)), "");
    }

    @Test
    public void encodesLikeTransformers() {
        assertEquals("wordpiece", encoder.kind());
        Encoding e = encoder.encode("这家餐厅的菜真好吃");
        assertArrayEquals(RESTAURANT, e.inputIds);
        long[] ones = new long[RESTAURANT.length];
        Arrays.fill(ones, 1L);
        assertArrayEquals(ones, e.attentionMask);
        assertArrayEquals(new long[RESTAURANT.length], e.tokenTypeIds);
    }

    @Test
    public void emptyAndBlankTextGiveClsSep() {
        assertArrayEquals(new long[] {2, 3}, encoder.encode("").inputIds);
        assertArrayEquals(new long[] {2, 3}, encoder.encode(" \t\u3000\u200b").inputIds);
    }

    @Test
    public void longTextIsTruncatedToMaxLength() {
        String text = String.join("", Collections.nCopies(100, "这家餐厅的菜真好吃"));
        Encoding e = encoder.encode(text);
        assertEquals(encoder.maxLength(), e.length());
        assertEquals(2, e.inputIds[0]);
        assertEquals(3, e.inputIds[e.length() - 1]);
        assertEquals(16, e.inputIds[1]);
    }

    @Test
    public void specialTokensInTextAreRecognised() {
        List<Integer> ids = encoder.tokenize("好[MASK]吃");
        assertEquals(3, ids.size());
        assertEquals(4, (int) ids.get(1));
    }

    private static ModelRunner fixed(float... logits) {
        return new ModelRunner() {
            @Override
            public float[] run(Encoding input) {
                return logits.clone();
            }

            @Override
            public String name() {
                return "fake";
            }
        };
    }

    @Test
    public void selfTestPassesAndFailsOnTheRightThings() {
        List<SelfTest.Golden> golden = Collections.singletonList(
                new SelfTest.Golden("这家餐厅的菜真好吃", RESTAURANT, new float[] {-2.0f, 2.5f}));
        SelfTest.Result ok = SelfTest.run(golden, encoder, fixed(-2.01f, 2.48f), 0.05);
        assertTrue(ok.message, ok.passed);
        assertEquals(0.02, ok.maxAbsDiff, 1e-4);

        SelfTest.Result drift = SelfTest.run(golden, encoder, fixed(-1.5f, 2.5f), 0.05);
        assertFalse(drift.passed);
        assertTrue(drift.message, drift.message.contains("max |diff|"));

        SelfTest.Result flipped = SelfTest.run(golden, encoder, fixed(3f, 2.5f), 10);
        assertFalse(flipped.passed);
        assertTrue(flipped.message.contains("top class"));

        List<SelfTest.Golden> wrongIds = Collections.singletonList(
                new SelfTest.Golden("这家餐厅的菜真好吃", new long[] {2, 99, 3}, new float[] {-2.0f, 2.5f}));
        SelfTest.Result ids = SelfTest.run(wrongIds, encoder, fixed(-2.0f, 2.5f), 0.05);
        assertFalse(ids.passed || ids.idsMatch);

        ModelRunner broken = new ModelRunner() {
            @Override
            public float[] run(Encoding input) throws Exception {
                throw new IllegalStateException("no backend");
            }

            @Override
            public String name() {
                return "broken";
            }
        };
        SelfTest.Result crash = SelfTest.run(golden, encoder, broken, 0.05);
        assertFalse(crash.passed);
        assertTrue(crash.message.contains("no backend"));
        assertFalse(SelfTest.run(Collections.<SelfTest.Golden>emptyList(), encoder, fixed(0f, 0f), 1).passed);
    }

    @Test
    public void selfTestMessagesUseDotsWhateverTheDevicesLocale() {
        Locale before = Locale.getDefault();
        Locale.setDefault(Locale.GERMANY);
        try {
            ModelRunner off = new ModelRunner() {
                @Override
                public float[] run(Encoding input) {
                    return new float[] {0.5f, 0.25f};
                }

                @Override
                public String name() {
                    return "fake";
                }
            };
            List<SelfTest.Golden> golden = List.of(new SelfTest.Golden("", new long[] {2, 3}, new float[] {1.5f, 0.25f}));
            SelfTest.Result r = SelfTest.run(golden, encoder, off, 0.1);
            assertFalse(r.passed);
            assertTrue(r.message, r.message.contains("1.000 > 0.1000"));
        } finally {
            Locale.setDefault(before);
        }
    }

    @Test
    public void aPooledEmbeddingIsReadAsItIsAndCheckedByCosine() throws Exception {
        // a manifest of an export --pooling mean --normalize: its golden example's vector is the output
        File dir = java.nio.file.Files.createTempDirectory("pooled").toFile();
        java.nio.file.Files.write(new File(dir, "manifest.json").toPath(), ("{\"task\": \"feature-extraction\", "
                + "\"outputs\": [\"sentence_embedding\"], \"golden\": [{\"text\": \"\", \"input_ids\": [2, 3], "
                + "\"outputs\": {\"sentence_embedding\": {\"shape\": [1, 4], \"values\": [0.6, 0.0, -0.8, 0.0]}}}]}")
                .getBytes(java.nio.charset.StandardCharsets.UTF_8));
        List<SelfTest.Golden> golden = SelfTest.load(AssetSource.directory(dir), "manifest.json");
        assertArrayEquals(new float[] {0.6f, 0f, -0.8f, 0f}, golden.get(0).logits, 0f);
        SelfTest.Result same = SentenceEmbedding.check(golden, encoder, fixed(0.59f, 0.01f, -0.8f, 0f), 0.99);
        assertTrue(same.message, same.passed);
        SelfTest.Result turned = SentenceEmbedding.check(golden, encoder, fixed(0.8f, 0f, -0.6f, 0f), 0.99);
        assertFalse(turned.passed); // cosine 0.96
        assertTrue(turned.message, turned.message.contains("cosine 0.96000 < 0.99000"));
        SelfTest.Result wrongShape = SentenceEmbedding.check(golden, encoder, fixed(0.6f, -0.8f), 0.99);
        assertFalse(wrongShape.passed);
        assertTrue(wrongShape.message, wrongShape.message.contains("expected 4"));
        assertEquals(1.0, SentenceEmbedding.cosine(new float[2], new float[2]), 0);
    }
}
