package org.mobileexport.demo;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;
import org.junit.Before;
import org.junit.Test;
import org.mobileexport.core.Encoding;
import org.pytorch.executorch.EValue;
import org.pytorch.executorch.Module;
import org.pytorch.executorch.Tensor;

/** The app's ExecuTorchRunner on a fake Module: how it calls a .pte and that it never leaks one. */
public class ExecuTorchRunnerTest {
    private static final File PTE = new File("model.pte");
    private static final Encoding TEXT = new Encoding(new long[] {2, 7, 3}, new long[] {0, 0, 0});

    @Before
    public void reset() {
        Module.destroyed = 0;
    }

    private static EValue floats(float... values) {
        return EValue.from(Tensor.fromBlob(values, new long[] {1, values.length}));
    }

    @Test
    public void aProgramTheAppCannotCallIsDestroyedNotLeaked() throws Exception {
        Module.next = new Module.Program() {
            public String[] methods() {
                return new String[] {"encode"};
            }

            public EValue[] execute(String method, EValue[] inputs) {
                throw new AssertionError("nothing may run");
            }
        };
        try {
            new ExecuTorchRunner(PTE, 3);
            fail("a .pte without forward or the layer loop was accepted");
        } catch (IOException expected) {
            assertTrue(expected.getMessage().contains("neither"));
        }
        assertEquals(1, Module.destroyed);
    }

    @Test
    public void aPlainForwardProgramRunsAsPythonsRunnerRunsIt() throws Exception {
        List<String> calls = new ArrayList<>();
        Module.next = new Module.Program() {
            public String[] methods() {
                return new String[] {"forward"};
            }

            public EValue[] execute(String method, EValue[] inputs) {
                calls.add(method + "/" + inputs.length);
                long[] ids = inputs[0].toTensor().longs;
                return new EValue[] {floats(ids.length, -ids.length)};
            }
        };
        try (ExecuTorchRunner runner = new ExecuTorchRunner(PTE, 3)) {
            assertArrayEquals(new float[] {3, -3}, runner.run(TEXT), 0f);
            assertTrue(runner.name(), runner.name().contains("forward"));
        }
        assertEquals(List.of("forward/3"), calls);
        assertEquals(1, Module.destroyed);
    }

    /** A block as Python's pack writes it: a deflated zip of {@code card.json}, in base64. */
    private static String block(String card) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ZipOutputStream zip = new ZipOutputStream(bytes)) {
            zip.putNextEntry(new ZipEntry("card.json"));
            zip.write(card.getBytes(StandardCharsets.UTF_8));
            zip.closeEntry();
        }
        return Base64.getEncoder().encodeToString(bytes.toByteArray());
    }

    private static Module.Program carrying(String assets, List<String> calls) {
        return new Module.Program() {
            public String[] methods() {
                return new String[] {"forward", "mobile_export_assets"};
            }

            public EValue[] execute(String method, EValue[] inputs) {
                calls.add(method + "/" + inputs.length);
                return method.equals("forward") ? new EValue[] {floats(1, 2)} : new EValue[] {EValue.from(assets)};
            }
        };
    }

    @Test
    public void aFileAloneIsFedTheInputsItsCardNames() throws Exception {
        List<String> calls = new ArrayList<>(); // renamed on the device: the card's own entry is read
        Module.next = carrying(block("{\"artifacts\": [{\"file\": \"model.pte\", \"calling_convention\": "
                + "{\"inputs\": [\"input_ids\", \"attention_mask\"]}}]}"), calls);
        try (ExecuTorchRunner runner = ExecuTorchRunner.alone(new File("renamed.pte"))) {
            assertArrayEquals(new float[] {1, 2}, runner.run(TEXT), 0f);
        }
        assertEquals(List.of("mobile_export_assets/0", "forward/2"), calls);
    }

    @Test
    public void aFileAloneWithABrokenBlockIsRefusedAndDestroyed() throws Exception {
        for (String bad : new String[] {"not base64!", Base64.getEncoder().encodeToString(new byte[] {1, 2, 3}),
                block("[1, 2]")}) {
            Module.destroyed = 0;
            Module.next = carrying(bad, new ArrayList<>());
            try (ExecuTorchRunner runner = ExecuTorchRunner.alone(PTE)) {
                fail("a broken block must not load: " + runner.name());
            } catch (IOException e) {
                assertTrue(e.getMessage(), e.getMessage().contains("model.pte"));
            } catch (org.json.JSONException e) {
                fail("a broken card must be an IOException: " + e);
            }
            assertEquals(1, Module.destroyed);
        }
    }

    @Test
    public void aProgramOfTwoInputsIsFedTwo() throws Exception {
        List<String> calls = new ArrayList<>(); // DistilBERT: input_ids and attention_mask, no token type ids
        Module.next = new Module.Program() {
            public String[] methods() {
                return new String[] {"forward"};
            }

            public EValue[] execute(String method, EValue[] inputs) {
                calls.add(method + "/" + inputs.length);
                return new EValue[] {floats(1, 2)};
            }
        };
        try (ExecuTorchRunner runner = new ExecuTorchRunner(PTE, 2)) {
            assertArrayEquals(new float[] {1, 2}, runner.run(TEXT), 0f);
        }
        assertEquals(List.of("forward/2"), calls);
    }

    @Test
    public void aTopKHeadsInt64OutputsComeAsFloats() throws Exception {
        Module.next = new Module.Program() { // a --head topk file: positions and ids are int64, scores float
            public String[] methods() {
                return new String[] {"forward"};
            }

            public EValue[] execute(String method, EValue[] inputs) {
                return new EValue[] {EValue.from(Tensor.fromBlob(new long[] {3, -1}, new long[] {1, 2})),
                    EValue.from(Tensor.fromBlob(new long[] {250001, 7}, new long[] {1, 2, 1})), floats(0.5f, 0.25f)};
            }
        };
        try (ExecuTorchRunner runner = new ExecuTorchRunner(PTE, 2)) {
            float[][] out = runner.runAll(TEXT);
            assertArrayEquals(new float[] {3, -1}, out[0], 0f);
            assertArrayEquals(new float[] {250001, 7}, out[1], 0f); // exact: every id below 2^24 is
            assertArrayEquals(new float[] {0.5f, 0.25f}, out[2], 0f);
        }
    }

    @Test
    public void theLayerLoopFeedsEachLayerACopyOfTheLast() throws Exception {
        float[] arena = new float[2]; // one planned buffer for the layer's output, reused on every call
        Module.next = new Module.Program() {
            public String[] methods() {
                return new String[] {"embed", "layer_schedule", "layer_group_0", "head"};
            }

            public EValue[] execute(String method, EValue[] inputs) {
                switch (method) {
                    case "layer_schedule":
                        return new EValue[] {EValue.from(0), EValue.from(0), EValue.from(0), EValue.from(0)};
                    case "embed":
                        return new EValue[] {floats(1, 1), floats(0, 0)};
                    case "layer_group_0": {
                        float[] in = inputs[0].toTensor().floats;
                        java.util.Arrays.fill(arena, 0); // an overlapping plan clears its output first
                        for (int i = 0; i < arena.length; i++) {
                            arena[i] = in[i] * 2;
                        }
                        return new EValue[] {EValue.from(Tensor.fromBlob(arena, new long[] {1, 2}))};
                    }
                    default:
                        return new EValue[] {floats(inputs[0].toTensor().floats)};
                }
            }
        };
        try (ExecuTorchRunner runner = new ExecuTorchRunner(PTE, 3)) {
            assertArrayEquals(new float[] {16, 16}, runner.run(TEXT), 0f);
            assertTrue(runner.name(), runner.name().contains("4 layers"));
        }
    }
}
