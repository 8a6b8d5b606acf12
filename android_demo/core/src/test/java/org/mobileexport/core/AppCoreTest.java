package org.mobileexport.core;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.ByteArrayInputStream;
import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.Test;

/** The app's file copy, .pte calling convention and device figures, on the JVM. */
public class AppCoreTest {
    private static String sha256(byte[] data) throws Exception {
        StringBuilder hex = new StringBuilder();
        for (byte b : MessageDigest.getInstance("SHA-256").digest(data)) {
            hex.append(String.format(Locale.ROOT, "%02x", b));
        }
        return hex.toString();
    }

    private static final class CountingSource implements AssetSource {
        final byte[] data;
        final AtomicInteger opens = new AtomicInteger();

        CountingSource(byte[] data) {
            this.data = data;
        }

        @Override
        public java.io.InputStream open(String name) {
            opens.incrementAndGet();
            return new ByteArrayInputStream(data);
        }
    }

    private static byte[] payload() {
        byte[] data = new byte[300_000];
        for (int i = 0; i < data.length; i++) {
            data[i] = (byte) (i * 31 + 7);
        }
        return data;
    }

    private static List<String> leftovers(File dir) {
        List<String> names = new ArrayList<>();
        for (String n : dir.list()) {
            if (n.endsWith(".tmp")) {
                names.add(n);
            }
        }
        return names;
    }

    @Test
    public void aCopyIsVerifiedThenReusedAndATornOneIsCopiedAgain() throws Exception {
        File dir = Files.createTempDirectory("copy").toFile();
        byte[] data = payload();
        CountingSource src = new CountingSource(data);
        File out = AssetCopy.toFile(src, "model.pte", dir, data.length, sha256(data));
        assertArrayEquals(data, Files.readAllBytes(out.toPath()));
        AssetCopy.toFile(src, "model.pte", dir, data.length, sha256(data));
        assertEquals("a good copy was copied again", 1, src.opens.get());
        try (RandomAccessFile f = new RandomAccessFile(out, "rw")) {
            f.setLength(data.length / 2); // torn: the stamp is there, the bytes are not
        }
        AssetCopy.toFile(src, "model.pte", dir, data.length, sha256(data));
        assertEquals(2, src.opens.get());
        assertArrayEquals(data, Files.readAllBytes(out.toPath()));
        assertTrue(leftovers(dir).isEmpty());
    }

    @Test
    public void aCopyWhoseBytesAreNotTheManifestsIsRefusedAndLeavesNothing() throws Exception {
        File dir = Files.createTempDirectory("copy").toFile();
        byte[] data = payload();
        byte[] other = data.clone();
        other[12345] ^= 1;
        try {
            AssetCopy.toFile(new CountingSource(other), "model.onnx.data", dir, data.length, sha256(data));
            fail("a corrupt copy was accepted");
        } catch (IOException expected) {
            assertTrue(expected.getMessage(), expected.getMessage().contains("sha256"));
        }
        try {
            AssetCopy.toFile(new CountingSource(data), "model.onnx.data", dir, data.length + 1, sha256(data));
            fail("a short copy was accepted");
        } catch (IOException expected) {
            assertTrue(expected.getMessage(), expected.getMessage().contains("bytes"));
        }
        assertEquals(Collections.emptyList(), Arrays.asList(dir.list()));
    }

    @Test
    public void concurrentLoadsCopyOnceIntoOneCompleteFile() throws Exception {
        File dir = Files.createTempDirectory("copy").toFile();
        byte[] data = payload();
        CountingSource src = new CountingSource(data);
        List<Thread> threads = new ArrayList<>();
        List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        for (int i = 0; i < 4; i++) {
            Thread t = new Thread(() -> {
                try {
                    File f = AssetCopy.toFile(src, "model.pte", dir, data.length, sha256(data));
                    if (!Arrays.equals(data, Files.readAllBytes(f.toPath()))) {
                        errors.add(new AssertionError("incomplete file handed out"));
                    }
                } catch (Exception e) {
                    errors.add(e);
                }
            });
            threads.add(t);
            t.start();
        }
        for (Thread t : threads) {
            t.join();
        }
        assertEquals(Collections.emptyList(), errors);
        assertEquals(1, src.opens.get());
        assertTrue(leftovers(dir).isEmpty());
    }

    /** A fake .pte program whose methods return views of their own reused output buffer, as the JNI does. */
    private static final class FakeProgram implements LayerLoop.Program<float[]> {
        final Map<String, float[]> buffers = new HashMap<>();
        final List<String> calls = new ArrayList<>();
        final boolean copies;

        FakeProgram(boolean copies) {
            this.copies = copies;
        }

        @Override
        public List<float[]> execute(String method, List<float[]> in) {
            calls.add(method);
            if (method.equals("layer_schedule")) {
                return Arrays.asList(new float[] {0}, new float[] {0}, new float[] {1});
            }
            if (method.equals("head_inputs")) { // a top-k head reads input_ids (input 0)
                return Arrays.asList(new float[] {0});
            }
            float[] out = buffers.computeIfAbsent(method, k -> new float[4]);
            switch (method) {
                case "embed":
                    Arrays.fill(out, 1);
                    return Arrays.asList(out, new float[] {0, 0, 0, 0});
                case "head":
                case "forward":
                    if (in.size() == 2) { // hidden + input_ids: the head's second output reads the ids
                        return Arrays.asList(new float[] {in.get(0)[0]}, in.get(1).clone());
                    }
                    return Arrays.asList(new float[] {in.get(0)[0], -in.get(0)[0]});
                default: // a layer: the plan puts its output over its input; clears it, then reads the input
                    Arrays.fill(out, 0);
                    float[] x = in.get(0);
                    for (int i = 0; i < out.length; i++) {
                        out[i] = x[i] + 10;
                    }
                    return Arrays.asList(out);
            }
        }

        @Override
        public long toLong(float[] value) {
            return (long) value[0];
        }

        @Override
        public float[] copy(float[] value) {
            return copies ? value.clone() : value;
        }
    }

    @Test
    public void theLayerLoopFeedsCopiesSoAnOverlappingMemoryPlanCannotCorruptIt() throws Exception {
        List<String> methods = Arrays.asList("embed", "layer_schedule", "layer_group_0", "layer_group_1", "head");
        FakeProgram good = new FakeProgram(true);
        LayerLoop<float[]> loop = LayerLoop.of(good, methods);
        assertEquals("layer loop (3 layers)", loop.describe());
        assertEquals(31f, loop.run(Arrays.asList(new float[4], new float[4], new float[4]))[0], 0f);
        assertEquals(Arrays.asList("layer_schedule", "embed", "layer_group_0", "layer_group_0", "layer_group_1", "head"),
                good.calls);
        // The same plan without the copies: layer_group_0's second call reads the output it just cleared.
        LayerLoop<float[]> aliased = LayerLoop.of(new FakeProgram(false), methods);
        assertFalse(aliased.run(Arrays.asList(new float[4], new float[4], new float[4]))[0] == 31f);
    }

    @Test
    public void aHeadThatReadsModelInputsGetsThemInHeadInputsOrder() throws Exception {
        FakeProgram fake = new FakeProgram(true);
        LayerLoop<float[]> loop = LayerLoop.of(
                fake, Arrays.asList("embed", "layer_schedule", "layer_group_0", "layer_group_1", "head", "head_inputs"));
        List<float[]> out = loop.runAll(Arrays.asList(new float[] {7, 8, 9, 4}, new float[4], new float[4]));
        assertEquals(31f, out.get(0)[0], 0f);
        assertArrayEquals(new float[] {7, 8, 9, 4}, out.get(1), 0f); // input_ids reached the head
        // without head_inputs the head gets the hidden state alone (the export's other heads)
        LayerLoop<float[]> plain = LayerLoop.of(
                new FakeProgram(true), Arrays.asList("embed", "layer_schedule", "layer_group_0", "layer_group_1", "head"));
        assertEquals(2, plain.runAll(Arrays.asList(new float[4], new float[4], new float[4])).get(0).length);
    }

    @Test
    public void aProgramWithBothEntriesRunsTheLoopAndNeverForward() throws Exception {
        // --pte-entry both: the loop keeps one packed copy of the shared layer in RAM, so the app takes it
        FakeProgram fake = new FakeProgram(true);
        LayerLoop<float[]> both = LayerLoop.of(
                fake, Arrays.asList("forward", "embed", "layer_schedule", "layer_group_0", "layer_group_1", "head"));
        assertEquals("layer loop (3 layers)", both.describe());
        assertEquals(31f, both.run(Arrays.asList(new float[4], new float[4], new float[4]))[0], 0f);
        assertFalse(fake.calls.contains("forward"));
    }

    @Test
    public void aPlainForwardProgramRunsAndAProgramWithNeitherIsRefused() throws Exception {
        FakeProgram fake = new FakeProgram(true);
        LayerLoop<float[]> forward = LayerLoop.of(fake, Arrays.asList("forward"));
        assertEquals("forward", forward.describe());
        assertEquals(5f, forward.run(Arrays.asList(new float[] {5}, new float[1], new float[1]))[0], 0f);
        assertEquals(Arrays.asList("forward"), fake.calls);
        try {
            LayerLoop.of(fake, Arrays.asList("encode"));
            fail("a program with neither convention was accepted");
        } catch (IOException expected) {
            assertTrue(expected.getMessage().contains("neither"));
        }
        try {
            LayerLoop.of(fake, Arrays.asList("embed", "layer_schedule", "head")); // schedule names absent groups
            fail("a schedule naming missing methods was accepted");
        } catch (IOException expected) {
            assertTrue(expected.getMessage().contains("layer_group_0"));
        }
    }

    @Test
    public void residentMemoryAndMedianAreRead() {
        assertEquals(123456, DeviceStats.rssKib("Name:\tjava\nVmPeak:\t 999999 kB\nVmRSS:\t  123456 kB\nThreads: 3\n"));
        assertEquals(-1, DeviceStats.rssKib("Name:\tjava\n"));
        assertTrue(DeviceStats.currentRssKib() > 1024); // this JVM, on Linux
        assertEquals(2.0, DeviceStats.median(new double[] {3, 1, 2}), 0);
        assertEquals(2.5, DeviceStats.median(new double[] {4, 1, 3, 2}), 0);
    }
}
